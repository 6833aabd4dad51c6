#pragma once
/// The Amdahl scheduler: which kernel the next experiment goes to, and why.
#include <string>
#include <vector>

#include "daemon/run_folder/kernel_progress.hpp"

namespace ak {

struct Pick {
  int index = -1;        ///< into the kernels; -1 when every kernel has converged
  std::string reason;    ///< one line for the log
  /// With no pick: a kernel is still open but waits for its experiments in flight (the run's
  /// tail: a free GPU idles until one finishes), rather than every kernel having converged.
  bool waits_for_flight = false;
};

/// Kernels without a baseline come first, in config order. Then the open kernel with the largest
/// expected end-to-end gain: its share of the program's time now (weight / speedup so far), times
/// its distance from the roofline (1 - pct_peak), damped by 0.7 per revert in a row so that
/// effort moves on when returns diminish, and by 0.7 per experiment of it in flight, so that a
/// free GPU goes to the next kernel once the first is as busy as its gain warrants.
/// A kernel whose starter is being measured, or whose proposer has nothing beside what is in
/// flight, waits; with `model` set, so does a kernel held to another GPU model.
Pick pick_next(const std::vector<KernelProgress>& kernels, const ConvergenceConfig& c, const std::string& model = "");

double expected_gain(const KernelProgress& k);

}  // namespace ak
