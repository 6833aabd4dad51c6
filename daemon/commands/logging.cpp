#include "daemon/commands/logging.hpp"

#include "common/text_escape.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace ak {
namespace {

std::string safe_payload(const spdlog::details::log_msg& msg) {
  return terminal_safe(std::string_view(msg.payload.data(), msg.payload.size()));
}

/// %* in a pattern: the message with its control characters shown escaped, so that text quoted
/// from an LLM or a compiler can neither steer the terminal nor forge a line of the log.
class SafeMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string s = safe_payload(msg);
    dest.append(s.data(), s.data() + s.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<SafeMessage>(); }
};

std::unique_ptr<spdlog::formatter> safe_formatter(const std::string& pattern) {
  auto f = std::make_unique<spdlog::pattern_formatter>();
  f->add_flag<SafeMessage>('*').set_pattern(pattern);
  return f;
}

/// Writes "<N>message" lines to stderr, the form journald parses for a priority.
class JournalSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string line = "<";
    line += std::to_string(syslog_priority(msg.level));
    line += ">";
    line += safe_payload(msg);
    line += "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }
  void flush_() override { std::fflush(stderr); }
};

}  // namespace

std::optional<spdlog::level::level_enum> parse_log_level(const std::string& s) {
  if (s == "trace") return spdlog::level::trace;
  if (s == "debug") return spdlog::level::debug;
  if (s == "info") return spdlog::level::info;
  if (s == "warn" || s == "warning") return spdlog::level::warn;
  if (s == "error") return spdlog::level::err;
  return std::nullopt;
}

bool stderr_is_journal() {
  const char* js = std::getenv("JOURNAL_STREAM");
  if (!js) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(js, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  if (fstat(2, &st) != 0) return false;
  return st.st_dev == dev && st.st_ino == ino;
}

int syslog_priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical: return 2;
    case spdlog::level::err: return 3;
    case spdlog::level::warn: return 4;
    case spdlog::level::info: return 6;
    default: return 7;
  }
}

void setup_logging(spdlog::level::level_enum level) {
  spdlog::sink_ptr sink;
  if (stderr_is_journal()) {
    sink = std::make_shared<JournalSink>();
  } else {
    sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    sink->set_formatter(safe_formatter("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ %*"));
  }
  sink->set_level(level);
  auto logger = std::make_shared<spdlog::logger>("autokernel", sink);
  logger->set_level(std::min(level, spdlog::level::debug));
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

Status add_log_file(const std::string& path) {
  try {
    auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false);
    file->set_formatter(safe_formatter("%Y-%m-%d %H:%M:%S.%e %-5l [%P] %*"));
    file->set_level(spdlog::level::debug);
    spdlog::default_logger()->sinks().push_back(file);
    return ok();
  } catch (const std::exception& e) {
    return error("cannot open the log file " + path + ": " + e.what());
  }
}

}  // namespace ak
