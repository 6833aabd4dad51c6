#pragma once
/// Judging one output against the reference, element by element, within the type's tolerance.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels_cuda/spec.hpp"

namespace ak {

/// The outcome of comparing one output buffer; the worst element is the one to show a person.
struct Comparison {
  int64_t elements = 0;
  int64_t mismatched = 0;   ///< outside tolerance (unwritten ones included)
  int64_t unwritten = 0;    ///< still holding the poison: the kernel never wrote them
  int64_t worst_index = -1;
  float worst_got = 0;
  float worst_expected = 0;
  double worst_ratio = 0;   ///< |got - expected| / (atol + rtol * |expected|); > 1 fails
  bool pass() const { return mismatched == 0; }
  /// "12 of 4096 elements wrong; worst at 17: got 0.51, expected 0.49 (2.1x the tolerance)".
  std::string describe() const;
};

/// `got` holds n elements of dtype d; `expected` is the fp32 reference.
Comparison compare_output(const void* got, DType d, const float* expected, int64_t n, Tolerance tol);

/// Sampled validation: `got` is the whole output, rows of `row_length` elements; `expected` holds
/// only `rows`, compacted. Indices in the result are indices into the whole output.
Comparison compare_rows(const void* got, DType d, const float* expected, const std::vector<int32_t>& rows,
                        int64_t row_length, Tolerance tol);

}  // namespace ak
