#include "harness/user_types/reference_process.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include <spdlog/spdlog.h>

#include "harness/process/worker_environment.hpp"

namespace ak {

const std::map<std::string, std::string>& embedded_harness_python();

const std::string& reference_server_source() { return embedded_harness_python().at("reference_server.py"); }

namespace {

constexpr size_t kTailLines = 20;
/// Linux refuses a single argument longer than this (MAX_ARG_STRLEN).
constexpr size_t kMaxArgument = 32 * 4096 - 1;

std::string path_of(const std::vector<std::string>& env) {
  for (auto& e : env)
    if (e.rfind("PATH=", 0) == 0) return e.substr(5);
  return "/usr/local/bin:/usr/bin:/bin";
}

std::string op_of(const nlohmann::json& req) {
  return req.is_object() && req.contains("op") && req["op"].is_string() ? req["op"].get<std::string>() : "?";
}

}  // namespace

Result<std::unique_ptr<ReferenceProcess>> ReferenceProcess::start(const ReferenceProcessOptions& options) {
  const std::vector<std::string> env = options.use_minimal_environment ? minimal_environment() : options.environment;
  const std::string python = find_executable(options.python, path_of(env));
  if (python.empty())
    return error("cannot start the reference process: no executable " + options.python +
                 " (in PATH " + path_of(env) + "); user types need a Python with torch: name it in the "
                 "config, e.g. a virtual environment's bin/python");
  if (options.source.size() > kMaxArgument)
    return error("cannot start the reference process: its program is " + std::to_string(options.source.size()) +
                 " bytes, over the " + std::to_string(kMaxArgument) + " one argument may hold");
  std::unique_ptr<ReferenceProcess> p(new ReferenceProcess());
  ChildOptions child;
  // As the compile server: whoever kills the worker's group kills this process with it, and if the
  // worker dies any other way, the kernel sends the signal.
  child.own_process_group = false;
  child.die_with_parent = true;
  child.core_dumps = false;
  child.relay_prefix = options.log_prefix;
  child.relay_output = [tail = p->tail_](const std::string& line) {
    spdlog::info("{}", line);
    std::lock_guard<std::mutex> lock(tail->mutex);
    tail->lines.push_back(line);
    if (tail->lines.size() > kTailLines) tail->lines.pop_front();
  };
  // -I: no PYTHON* variables, no user site, no script folder on sys.path; -c: the program never
  // comes from a file another process could change.
  if (auto s = p->child_.start({python, "-I", "-c", options.source}, env, child); !s) return s.error();
  return p;
}

ReferenceProcess::~ReferenceProcess() { child_.kill_now(); }

std::vector<std::string> ReferenceProcess::stderr_tail() const {
  std::lock_guard<std::mutex> lock(tail_->mutex);
  return {tail_->lines.begin(), tail_->lines.end()};
}

Error ReferenceProcess::stop(const std::string& what) {
  child_.kill_now();  // also relays what is left in its stderr pipe before the tail is read
  stopped_because_ = what;
  std::string message = "the reference process " + what;
  const auto tail = stderr_tail();
  if (tail.empty()) return error(message + " (it wrote nothing to stderr)");
  message += "; the end of its stderr:";
  const size_t from = tail.size() > 8 ? tail.size() - 8 : 0;
  for (size_t i = from; i < tail.size(); ++i) message += "\n  " + tail[i];
  return error(message);
}

Result<nlohmann::json> ReferenceProcess::request(const nlohmann::json& req, double timeout_s) {
  const std::string op = op_of(req);
  if (!child_.running())
    return error("the reference process cannot answer " + op + ": it is not running (" +
                 (stopped_because_.empty() ? "it was never started" : "it was stopped: " + stopped_because_) + ")");
  const std::string line = req.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (!child_.write_all(line)) {
    std::string how = "its stdin is closed";
    child_.ended(how);
    return stop("could not be sent " + op + ": " + how);
  }
  bool timed_out = false, eof = false;
  auto reply_line = child_.read_line(timeout_s, timed_out, eof);
  if (!reply_line) {
    if (timed_out) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", timeout_s);
      return stop(std::string("did not answer ") + op + " within " + seconds + " s and was killed");
    }
    std::string how = "it closed its stdout and was killed";
    for (int i = 0; i < 250 && !child_.ended(how); ++i) usleep(20000);
    return stop("ended while answering " + op + " (" + how + ")");
  }
  nlohmann::json reply = nlohmann::json::parse(*reply_line, nullptr, false);
  if (!reply.is_object() || !reply.contains("ok") || !reply["ok"].is_boolean())
    return stop("answered " + op + " with something that is not a JSON object with \"ok\": " +
                reply_line->substr(0, 200));
  if (!reply["ok"].get<bool>()) {
    const std::string why = reply.contains("error") && reply["error"].is_string() ? reply["error"].get<std::string>()
                                                                                   : reply.dump();
    Error e = error("the reference process failed " + op + ": " + why);
    // Out of memory in the process: the harness's limit, whatever it was judging.
    e.harness = reply.contains("harness") && reply["harness"].is_boolean() && reply["harness"].get<bool>();
    return e;
  }
  return reply;
}

}  // namespace ak
