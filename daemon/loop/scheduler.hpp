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
/// flight, waits; with `model` set, so does a kernel held to another GPU model; and so does one
/// whose reverts in a row and experiments in flight together reach max_consecutive_reverts
/// (reverts_spoken_for).
Pick pick_next(const std::vector<KernelProgress>& kernels, const ConvergenceConfig& c, const std::string& model = "");

double expected_gain(const KernelProgress& k);

/// Whether a kernel whose moves have started to fail (a revert since its last keep) has as many
/// experiments in flight as it has reverts left before its reverts in a row end it. One GPU never
/// tries a move past that point; on four, the siblings sent past it were the most of a leg's extra
/// experiments (three of reduce-1's on four H100s, after its fifth revert) and kept the run going
/// after one GPU's would have ended. Such a kernel gets no more until a verdict comes back: a free
/// GPU takes another kernel, or waits when none is open. A kernel fresh from a keep still gets
/// every free GPU (one kernel on eight GPUs explores eight moves of its new best at once).
bool reverts_spoken_for(const KernelProgress& k, const ConvergenceConfig& c);

}  // namespace ak
