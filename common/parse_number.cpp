#include "common/parse_number.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

namespace ak {

std::optional<long long> parse_integer(std::string_view text) {
  long long v = 0;
  const char* end = text.data() + text.size();
  auto [at, err] = std::from_chars(text.data(), end, v);
  if (text.empty() || err != std::errc() || at != end) return std::nullopt;
  return v;
}

std::optional<double> parse_decimal(std::string_view text, bool finite_only) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [at, err] = std::from_chars(text.data(), end, v, std::chars_format::general);
  if (text.empty() || err != std::errc() || at != end || (finite_only && !std::isfinite(v))) return std::nullopt;
  return v;
}

}  // namespace ak
