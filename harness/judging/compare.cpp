#include "harness/judging/compare.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>

#include "harness/gpu/host_dtype.hpp"
#include "harness/gpu/inputs.hpp"

namespace ak {
namespace {

bool is_poison(const void* data, DType d, int64_t i) {
  if (d == DType::F32) {
    uint32_t v;
    std::memcpy(&v, static_cast<const char*>(data) + 4 * i, 4);
    return v == 0xFFFFFFFFu;
  }
  return static_cast<const uint16_t*>(data)[i] == 0xFFFF;
}

/// The fp32 reference as the output dtype holds it, correctly rounded (past the dtype's range that
/// is infinity: a half-precision sum of large values overflows in PyTorch too), and the spacing of
/// the dtype there (one unit in the last place).
std::pair<float, double> in_dtype(float expected, DType d) {
  if (d == DType::F32 || !std::isfinite(expected))
    return {expected, std::isfinite(expected) ? std::fabs(double(std::nextafter(expected, INFINITY)) - expected) : 0.0};
  uint16_t bits[2];
  store_from_float(bits, d, 0, expected);
  float r = load_as_float(bits, d, 0);
  bits[1] = uint16_t((bits[0] & 0x7fff) + 1) | (bits[0] & 0x8000);  // the next value away from zero
  double ulp = std::fabs(double(load_as_float(bits, d, 1)) - r);
  if (!std::isfinite(ulp) && (bits[0] & 0x7fff) != 0) {  // at the top of the range: the step below
    bits[1] = uint16_t((bits[0] & 0x7fff) - 1) | (bits[0] & 0x8000);
    ulp = std::fabs(double(r) - load_as_float(bits, d, 1));
  }
  return {r, ulp};
}

/// How far outside the tolerance an element is: <= 1 passes, infinity for a wrong non-finite.
/// The comparison is in the output dtype, like torch.allclose on two tensors of that dtype, and a
/// difference of one unit in the last place always passes: two correct kernels whose fp32 results
/// fall on either side of a rounding boundary differ by exactly that.
double error_ratio(float got, float expected_fp32, DType d, Tolerance tol) {
  auto [expected, ulp] = in_dtype(expected_fp32, d);
  if (std::isnan(expected)) return std::isnan(got) ? 0 : std::numeric_limits<double>::infinity();
  if (std::isinf(expected)) return got == expected ? 0 : std::numeric_limits<double>::infinity();
  if (!std::isfinite(got)) return std::numeric_limits<double>::infinity();
  const double allowed = std::max(tol.atol + tol.rtol * std::fabs(double(expected)), ulp * 1.0001);
  return std::fabs(double(got) - expected) / allowed;
}

}  // namespace

std::string Comparison::describe() const {
  if (pass()) return "all " + std::to_string(elements) + " elements within tolerance";
  std::ostringstream o;
  o << mismatched << " of " << elements << " elements wrong";
  if (unwritten) o << " (" << unwritten << " never written)";
  o << "; worst at index " << worst_index << ": got " << worst_got << ", expected " << worst_expected;
  if (std::isfinite(worst_ratio)) o << " (" << worst_ratio << "x the tolerance)";
  return o.str();
}

Comparison compare_output(const void* got, DType d, const float* expected, int64_t n, Tolerance tol) {
  Comparison total;
  total.elements = n;
  std::mutex m;
  parallel_for(n, [&](int64_t begin, int64_t end) {
    Comparison part;
    for (int64_t i = begin; i < end; ++i) {
      bool poison = is_poison(got, d, i) && !std::isnan(expected[i]);
      float g = load_as_float(got, d, size_t(i));
      double r = poison ? std::numeric_limits<double>::infinity() : error_ratio(g, expected[i], d, tol);
      if (r <= 1.0) continue;
      ++part.mismatched;
      part.unwritten += poison;
      // The first of the worst: an unwritten element outranks any wrong value.
      if (r > part.worst_ratio || part.worst_index < 0) {
        part.worst_ratio = r;
        part.worst_index = i;
        part.worst_got = g;
        part.worst_expected = expected[i];
      }
    }
    std::lock_guard<std::mutex> lock(m);
    total.mismatched += part.mismatched;
    total.unwritten += part.unwritten;
    if (part.worst_index >= 0 &&
        (total.worst_index < 0 || part.worst_ratio > total.worst_ratio ||
         (part.worst_ratio == total.worst_ratio && part.worst_index < total.worst_index))) {
      total.worst_index = part.worst_index;
      total.worst_ratio = part.worst_ratio;
      total.worst_got = part.worst_got;
      total.worst_expected = part.worst_expected;
    }
  });
  return total;
}

Comparison compare_rows(const void* got, DType d, const float* expected, const std::vector<int32_t>& rows,
                        int64_t row_length, Tolerance tol) {
  const size_t elem = dtype_size(d), row_bytes = size_t(row_length) * elem;
  std::vector<char> picked(rows.size() * row_bytes);
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(picked.data() + i * row_bytes, static_cast<const char*>(got) + size_t(rows[i]) * row_bytes, row_bytes);
  Comparison c = compare_output(picked.data(), d, expected, int64_t(rows.size()) * row_length, tol);
  if (c.worst_index >= 0)
    c.worst_index = int64_t(rows[size_t(c.worst_index / row_length)]) * row_length + c.worst_index % row_length;
  return c;
}

}  // namespace ak
