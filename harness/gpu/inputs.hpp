#pragma once
/// Inputs the harness feeds a candidate: fresh seeded random values per run, the adversarial
/// recipes of stage 3, and the NaN poison written over outputs before every run.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels_cuda/spec.hpp"

namespace ak {

const char* recipe_name(Recipe r);

/// A host buffer of `numel` elements of dtype d, filled per `fill` and `recipe` from `seed`
/// (Fill::ClassIndex and the other target fills: int64 targets for `cols` classes; Fill::FanIn:
/// times `scale`).
/// The same arguments give the same bytes, whatever the number of threads.
std::vector<char> make_input(DType d, int64_t numel, int64_t cols, Fill fill, Recipe recipe, uint64_t seed,
                             float scale = 1.0f);

/// The targets Fill::ClassIndexOrInvalid gives its invalid rows, kind 0 to kInvalidTargets - 1:
/// outside [0, classes) and not kIgnoredTarget. The GPU's draw (device_inputs.cpp) follows the same rule.
inline constexpr int kInvalidTargets = 5;
int64_t invalid_target(int kind, int64_t classes);

/// The poison byte: 0xFF everywhere is NaN in fp16, bf16 and fp32 alike.
inline constexpr unsigned char kPoisonByte = 0xFF;

/// Runs f(begin, end) over [0, n) in chunks on the machine's cores.
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& f);

}  // namespace ak
