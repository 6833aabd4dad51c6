#pragma once
/// A child process of ours spoken to over pipes: the worker that runs candidates and the compile
/// server that compiles them. It is started with exactly the environment it is given (never the
/// daemon's own: minimal_environment()), in a process group of its own so that Ctrl-C in a
/// terminal reaches the daemon, which then stops its children itself.
#include <sys/types.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"

namespace ak {

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { kill_now(); }

  /// Starts argv[0] with `argv` and `env` ("NAME=value" each).
  Status start(const std::vector<std::string>& argv, const std::vector<std::string>& env);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  bool write_all(const std::string& s);
  /// Reads one line within `deadline_s`; sets timed_out (also when `cancel` is set) or eof.
  std::optional<std::string> read_line(double deadline_s, bool& timed_out, bool& eof,
                                       const std::atomic<bool>* cancel = nullptr);
  /// Reads exactly `n` bytes within `deadline_s` (after a line that announced them).
  std::optional<std::string> read_bytes(size_t n, double deadline_s, bool& timed_out, bool& eof);

  /// Waits up to `seconds` for the child to leave by itself; true if it did.
  bool wait_exit(double seconds);
  /// Waits for the child and says how it ended: "killed by signal 11 (Segmentation fault)".
  std::string reap();
  /// SIGKILL, reap, close the pipes.
  void kill_now();

 private:
  /// Fills pending_ until `enough` says so or the deadline passes.
  template <typename Enough>
  bool fill(double deadline_s, bool& timed_out, bool& eof, const std::atomic<bool>* cancel, Enough enough);
  void close_pipes();
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  std::string pending_;
};

}  // namespace ak
