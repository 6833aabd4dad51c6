#pragma once
/// Logging: stderr for the journal or a terminal, plus a file in the run directory.
/// Under systemd (JOURNAL_STREAM set) lines carry no timestamp and a "<N>" syslog priority
/// prefix, so journald keeps each line's level; on a terminal they carry time and level.
#include <optional>
#include <string>

#include <spdlog/common.h>

#include "common/result.hpp"

namespace ak {

/// "trace", "debug", "info", "warn", "error" to a level; nullopt for anything else.
std::optional<spdlog::level::level_enum> parse_log_level(const std::string& s);

/// True when stderr is the journal: JOURNAL_STREAM names the device and inode of fd 2.
bool stderr_is_journal();

/// The syslog priority journald reads from a "<N>" prefix: error 3, warning 4, info 6, debug 7.
int syslog_priority(spdlog::level::level_enum level);

/// Installs the default logger: stderr (journal or terminal format) at `level`.
void setup_logging(spdlog::level::level_enum level);

/// Adds a log file (timestamps, every level down to debug); an Error says why it cannot be opened.
Status add_log_file(const std::string& path);

}  // namespace ak
