#pragma once
/// What a child process writes outside its protocol (its stderr; in the worker also its stdout,
/// where device printf lands) is the candidate's text as much as the harness's: it reaches the
/// daemon's log only as lines cleaned of every control character, capped in length and in
/// volume, and prefixed with the child's name, so that it can neither drive a terminal nor pass
/// for a line of the daemon's own.
#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

namespace ak {

/// `text` (one line, without its newline) with every byte that is not printable UTF-8 replaced:
/// C0 controls except tab, DEL, C1 controls (U+0080..U+009F), the bidirectional overrides and
/// isolates (U+202A..U+202E, U+2066..U+2069), and invalid or overlong UTF-8 each become '?'.
std::string clean_output_line(std::string_view text);

/// Reads a child's output pipe on a thread of its own until the pipe ends or stop() is called,
/// and hands each line, cleaned and prefixed ("worker 0: ..."), to `sink`. The pipe is always
/// drained, so the child never blocks on a full pipe; what is over the caps is dropped and said.
class OutputRelay {
 public:
  struct Caps {
    size_t line_bytes = 1000;                  ///< a longer line is cut, saying so
    size_t window_bytes = 64 * 1024;           ///< at most this much is relayed per window
    std::chrono::seconds window{60};
  };
  using Sink = std::function<void(const std::string& line)>;

  /// Takes ownership of `fd` (the read end of the child's output pipe).
  OutputRelay(int fd, std::string prefix, Sink sink, Caps caps);
  OutputRelay(int fd, std::string prefix, Sink sink) : OutputRelay(fd, std::move(prefix), std::move(sink), Caps{}) {}
  OutputRelay(const OutputRelay&) = delete;
  OutputRelay& operator=(const OutputRelay&) = delete;
  ~OutputRelay() { stop(); }

  /// Relays what is already in the pipe, then ends the thread and closes the pipe. A child that
  /// left a process behind holding the pipe open cannot make this wait.
  void stop();

 private:
  void run();
  void take(const char* data, size_t n);
  void emit(std::string_view raw);
  void report_dropped();
  int fd_;
  std::string prefix_;
  Sink sink_;
  Caps caps_;
  std::string partial_;
  size_t window_used_ = 0, dropped_ = 0;
  std::chrono::steady_clock::time_point window_start_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace ak
