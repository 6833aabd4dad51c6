#pragma once
/// Knob lines of a kernel file: `#define AK_NAME value`, the plain lines a tuner may rewrite.
#include <map>
#include <string>

namespace ak {

using Knobs = std::map<std::string, long long>;   ///< "AK_THREADS" -> 256

/// Every integer knob line of a file, in name order.
Knobs read_knobs(const std::string& source);

/// The file with one knob's line rewritten; the text is unchanged if the knob is absent.
std::string with_knob(const std::string& source, const std::string& name, long long value);

/// "AK_THREADS=256 AK_VEC=1": a configuration's identity, for never measuring one twice.
std::string knob_key(const Knobs& k);

}  // namespace ak
