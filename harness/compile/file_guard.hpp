#pragma once
/// The compile sandbox's guard on the filesystem, enforced where files are opened rather than in
/// the candidate's text (the preprocessor has too many spellings for a pattern to win). Once
/// enabled in a process, every open, stat, access, readlink and unlink that the C library is
/// asked for by path (NVRTC's include search among them) is resolved to its real path first,
/// symbolic links and `..` included, and refused unless it lies under the one allowed folder.
/// Refused paths are recorded as asked for, so the caller can name them. Off by default: the
/// same binary runs the daemon and the worker, for which the guard stays a plain pass-through.
#include <string>
#include <vector>

namespace ak {

/// Turns the guard on for the rest of the process's life; `root` must exist.
void enable_file_guard(const std::string& root);

/// The paths refused since the last call, in the order they were asked for, without repeats.
std::vector<std::string> take_refused_paths();

/// Whether `path` may be read under the guard with this root (the rule itself, for tests).
bool path_allowed(const std::string& path, const std::string& root);

}  // namespace ak
