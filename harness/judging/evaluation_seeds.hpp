#pragma once
/// The harness's own random choices for one evaluation. A kernel rewarded for speed would use
/// any of them it could predict (which launches are checked, which rows are sampled, what the
/// next inputs are), so each is an independent draw from the operating system's CSPRNG
/// (getrandom), fresh per evaluation: none follows from another, from the inputs a kernel sees,
/// or from a clock it can read (%globaltimer). A fixed seed (`--seed`) derives them all instead,
/// to reproduce a verdict by hand; the verdict then says that its choices were predictable.
#include <cstdint>

#include "common/result.hpp"

namespace ak {

struct EvaluationSeeds {
  uint64_t stage_inputs = 0;      ///< the five stages' inputs (the verdict's `seed`)
  uint64_t sampled_rows = 0;      ///< which output rows a sampled validation checks
  uint64_t timing_inputs = 0;     ///< the inputs of every warm-up and timed launch
  uint64_t timing_choices = 0;    ///< which timed launches are checked, which kernel goes first
  bool fixed = false;             ///< derived from a given seed rather than drawn

  /// Four independent draws from the CSPRNG; an Error only if the OS has none to give.
  static Result<EvaluationSeeds> fresh();
  /// All four derived from `seed` (stage_inputs is `seed` itself, so a verdict's stage failure,
  /// which records its seed, can be run again with `--seed`).
  static EvaluationSeeds from(uint64_t seed);
};

/// One 64-bit draw from the CSPRNG (getrandom); an Error only if the OS has none to give.
Result<uint64_t> csprng_u64();

/// A strong 64-bit mixer (splitmix64's finaliser): independent-looking values from one root, for
/// the per-launch and per-case seeds derived inside one evaluation.
uint64_t mix_seed(uint64_t z);

}  // namespace ak
