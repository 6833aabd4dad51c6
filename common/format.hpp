#pragma once
/// printf-style formatting of numbers into a std::string, for messages, tables and reports.
#include <cstdio>
#include <string>

namespace ak {

/// format_numbers("%.2f us (%.1f%%)", 103.5, 88.2) -> "103.50 us (88.2%)". Up to three numbers.
inline std::string format_numbers(const char* format, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b, c);
  return buf;
}

}  // namespace ak
