#pragma once
/// Numbers read from text that came from outside (a results row, a profile's NVTX ranges, a
/// kernel file's knob lines, a commit's trailers): the whole text or nothing, in range or nothing,
/// never an exception. Callers name the text in their own message.
#include <optional>
#include <string_view>

namespace ak {

/// A decimal integer with an optional leading '-', all of `text`; nullopt when it is empty, holds
/// anything else, or does not fit a long long.
std::optional<long long> parse_integer(std::string_view text);

/// A decimal number ("12", "-0.5", "1e3"), all of `text`; nullopt for anything else and values
/// beyond a double's range, and for "nan" and "inf" unless `finite_only` is false (a table the
/// daemon wrote holds what printf wrote of a NaN).
std::optional<double> parse_decimal(std::string_view text, bool finite_only = true);

}  // namespace ak
