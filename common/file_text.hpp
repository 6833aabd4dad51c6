#pragma once
/// The one way a file given by a user (a config, a profile, a spec) or left in a run folder
/// (state.json, results.tsv) is read whole: every way it can fail becomes an Error that names the
/// path and the cause in words, never an exception.
#include <cstddef>
#include <string>

#include "common/result.hpp"

namespace ak {

/// Bytes beyond which a file is refused rather than read into memory (/dev/zero, a wrong path).
inline constexpr size_t kMaxFileBytes = size_t(1) << 30;

/// The whole text of `path`. The Error reads "PATH: no such file", "PATH: is a directory, not a
/// file", "PATH: cannot read: permission denied", "PATH: larger than N bytes", and so on. A pipe
/// (`<(...)`) or other non-directory is read like a file.
Result<std::string> read_file_text(const std::string& path, size_t max_bytes = kMaxFileBytes);

/// read_file_text, and an Error "PATH: the file is empty" for a file of no bytes (or only white space).
Result<std::string> read_nonempty_file_text(const std::string& path, size_t max_bytes = kMaxFileBytes);

}  // namespace ak
