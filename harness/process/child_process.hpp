#pragma once
/// A child process of ours spoken to over pipes: the worker that runs candidates and the compile
/// server that compiles them. It is started with exactly the environment it is given (never the
/// daemon's own: minimal_environment()), in a process group of its own so that Ctrl-C in a
/// terminal reaches the daemon, which then stops its children itself. Killing it kills its whole
/// process group, and with it whatever it started in that group (the worker's compile server).
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "harness/process/child_output.hpp"

namespace ak {

/// How a child is started besides its argv and environment.
struct ChildOptions {
  /// A process group of its own (killed as a whole); otherwise it joins its parent's group, so
  /// that whoever kills the parent's group kills it too.
  bool own_process_group = true;
  /// SIGKILL when the thread that started it ends (its process dies), however that happens.
  bool die_with_parent = false;
  uint64_t address_space_bytes = 0;   ///< RLIMIT_AS; 0: none
  bool core_dumps = true;             ///< false: RLIMIT_CORE 0 (a compiler killed at a limit dumps nothing)
  /// When set, the child's stderr is a pipe whose lines reach this sink cleaned, capped and
  /// prefixed (child_output.hpp) instead of being the caller's own stderr.
  OutputRelay::Sink relay_output;
  std::string relay_prefix;           ///< e.g. "worker 0: "
};

/// `name` if it holds a '/', else the first executable `dir/name` for dir in `path` (PATH's
/// syntax); "" when there is none. ChildProcess::start takes a path: this finds one.
std::string find_executable(const std::string& name, const std::string& path);

class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { kill_now(); }

  /// Starts argv[0] with `argv` and `env` ("NAME=value" each).
  Status start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
               const ChildOptions& options = {});
  bool running() const { return pid_ > 0; }
  /// Whether the child has ended on its own since it was last spoken to (reaped if so; `how`
  /// says how, as reap() does). A child that ended is no longer running().
  bool ended(std::string& how);
  pid_t pid() const { return pid_; }

  /// False when the child is gone (EPIPE: never a SIGPIPE of ours).
  bool write_all(const std::string& s);
  /// Closes the child's stdin: it reads end-of-file after what was written.
  void close_input();
  /// Reads one line within `deadline_s`; sets timed_out (also when `cancel` is set) or eof.
  std::optional<std::string> read_line(double deadline_s, bool& timed_out, bool& eof,
                                       const std::atomic<bool>* cancel = nullptr);
  /// Reads exactly `n` bytes within `deadline_s` (after a line that announced them).
  std::optional<std::string> read_bytes(size_t n, double deadline_s, bool& timed_out, bool& eof);

  /// Waits up to `seconds` for the child to leave by itself; true if it did.
  bool wait_exit(double seconds);
  /// Waits for the child and says how it ended: "killed by signal 11 (Segmentation fault)".
  std::string reap();
  /// The signal that ended the child last reaped (0 when it exited by itself).
  int last_signal() const { return last_signal_; }
  /// SIGKILL to the child (and to its process group when it has one of its own), reap, close the
  /// pipes, and relay what it wrote last.
  void kill_now();

 private:
  /// Fills pending_ until `enough` says so or the deadline passes.
  template <typename Enough>
  bool fill(double deadline_s, bool& timed_out, bool& eof, const std::atomic<bool>* cancel, Enough enough);
  void close_pipes();
  std::string describe(int status);
  /// After the child was reaped: kills what it left in its process group.
  void kill_group_left_behind();
  pid_t pid_ = -1;
  bool own_group_ = true;
  int last_signal_ = 0;
  std::unique_ptr<OutputRelay> relay_;
  int to_ = -1, from_ = -1;
  std::string pending_;
};

}  // namespace ak
