#pragma once
/// Inputs the harness feeds a candidate: fresh seeded random values per run, the adversarial
/// recipes of stage 3, and the NaN poison written over outputs before every run.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels_cuda/spec.hpp"

namespace ak {

/// How the Data input of a run is drawn. Weights are always uniform in [0.5, 1.5].
enum class Recipe {
  Normal,        ///< approximately N(0, 1)
  NearMax,       ///< magnitudes near fp16's largest value (32768 to 65504, multiples of 32), random signs
  Tiny,          ///< subnormal magnitudes of the dtype
  OneHuge,       ///< normal values with one huge value in each row
  ConstantRows,  ///< every element of a row equal (a small integer)
  MixedSigns,    ///< alternating signs, integer magnitudes from 1 to 1000
};
const char* recipe_name(Recipe r);
inline constexpr Recipe kAdversarialRecipes[] = {Recipe::NearMax, Recipe::Tiny, Recipe::OneHuge,
                                                 Recipe::ConstantRows, Recipe::MixedSigns};

/// A host buffer of `numel` elements of dtype d, filled per `fill` and `recipe` from `seed`.
/// The same arguments give the same bytes, whatever the number of threads.
std::vector<char> make_input(DType d, int64_t numel, int64_t cols, Fill fill, Recipe recipe, uint64_t seed);

/// The poison byte: 0xFF everywhere is NaN in fp16, bf16 and fp32 alike.
inline constexpr unsigned char kPoisonByte = 0xFF;

/// Runs f(begin, end) over [0, n) in chunks on the machine's cores.
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& f);

}  // namespace ak
