#pragma once
/// The static_asserts of a kernel file, evaluated for a knob configuration before it costs an
/// experiment: a tile of 16 columns split over 2 warps along N cannot compile, and the tuner
/// need not ask the GPU to find out. Only what can be read for certain is judged: one-line
/// `constexpr int kName = ...;` definitions and `static_assert(..., "why");` lines whose
/// expressions use integers, knobs and those constants (+ - * / % << >>, comparisons, && || !,
/// ?:). An assert that uses anything else is left to the compiler.
#include <optional>
#include <string>

#include "daemon/proposers/knobs.hpp"

namespace ak {

/// The message of the first static_assert of `source` that `knobs` break, if any.
std::optional<std::string> broken_assert(const std::string& source, const Knobs& knobs);

}  // namespace ak
