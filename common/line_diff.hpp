#pragma once
/// A unified diff of two texts, line by line, as `diff -u` writes its hunks: what a person (or a
/// model) reads to see what a candidate changed against the file it started from.
#include <string>

namespace ak {

/// The hunks ("@@ -a,b +c,d @@", then lines starting ' ', '-' or '+') turning `from` into `to`,
/// with `context` unchanged lines around each change; "" when the texts are equal. Headers name
/// the two sides `from_name` and `to_name`.
std::string unified_diff(const std::string& from, const std::string& to, const std::string& from_name,
                         const std::string& to_name, int context = 3);

}  // namespace ak
