#pragma once
/// The reference process of a user type: harness/user_types/reference_server.py (embedded in the binary)
/// run by Python with torch beside the worker, on the worker's GPU. It draws each launch's inputs,
/// writes them into the worker's pool (harness/user_types/ipc_pool.hpp), and judges the candidate's outputs
/// in its own address space, so that neither the seeds nor the expected values ever enter the
/// worker, whose memory a candidate kernel can read. One JSON object per line each way; its
/// stderr is a log (relayed cleaned, and its last lines kept for the errors).
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "harness/process/child_process.hpp"

namespace ak {

/// The text of harness/user_types/reference_server.py, as built into the binary.
const std::string& reference_server_source();

struct ReferenceProcessOptions {
  /// The Python that has torch: a path, or a name looked up in the environment's PATH.
  std::string python = "python3";
  /// The program it runs (`python -I -c <source>`); the embedded server unless a test gives one.
  std::string source = reference_server_source();
  /// Its whole environment ("NAME=value"); the default is minimal_environment().
  std::vector<std::string> environment;
  bool use_minimal_environment = true;
  /// Prefix of its log lines as they reach the log ("reference 0: ").
  std::string log_prefix = "reference: ";
};

class ReferenceProcess {
 public:
  /// Starts the server; a missing python or a source too long for one argument is an Error. That
  /// torch imports and sees the GPU is the first request's answer ({"op":"hello"}).
  static Result<std::unique_ptr<ReferenceProcess>> start(const ReferenceProcessOptions& options = {});
  ReferenceProcess(const ReferenceProcess&) = delete;
  ReferenceProcess& operator=(const ReferenceProcess&) = delete;
  /// Kills it (and so closes its mapping of the pool: destroy it before freeing the pool).
  ~ReferenceProcess();

  /// Sends `req` and waits up to `timeout_s` for its reply line. The reply when it says "ok";
  /// otherwise an Error naming the op and quoting the server's "error", Error::harness set when
  /// the reply says "harness": true (the process ran out of memory). A reply that is not a JSON
  /// object with "ok", a timeout or the process's death is an Error that says so, with the last
  /// lines of its stderr; the process is then stopped and every later request fails at once.
  Result<nlohmann::json> request(const nlohmann::json& req, double timeout_s);

  bool running() const { return child_.running(); }
  /// The last lines the process wrote to stderr, cleaned, oldest first.
  std::vector<std::string> stderr_tail() const;

 private:
  /// Lines shared with the relay's thread, which may outlive a request.
  struct Tail {
    std::mutex mutex;
    std::deque<std::string> lines;
  };
  ReferenceProcess() = default;
  /// Stops the process after `what` went wrong and returns the Error for it.
  Error stop(const std::string& what);
  ChildProcess child_;
  std::shared_ptr<Tail> tail_ = std::make_shared<Tail>();
  std::string stopped_because_;
};

}  // namespace ak
