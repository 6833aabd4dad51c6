#pragma once
/// The one way the daemon writes a whole file that a reader (a restart, `status`, a person) may
/// open at any moment: whole or not at all, never half-written by a crash or a full disk.
#include <string>

#include "common/result.hpp"

namespace ak {

/// Writes `text` to `path` through a temporary file beside it (PATH.tmp.PID, this process's own,
/// so that processes writing one file at once each leave it whole), synced, then renamed over the
/// old one. The Error names the path and the cause ("cannot write PATH: ...").
Status write_file_atomic(const std::string& path, const std::string& text);

}  // namespace ak
