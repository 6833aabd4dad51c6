#include "harness/compile/compile_sandbox.hpp"

#include <signal.h>

#include <cmath>
#include <mutex>

#include <spdlog/spdlog.h>

#include "harness/compile/module_size.hpp"
#include "harness/process/child_process.hpp"
#include "harness/process/worker_environment.hpp"

namespace ak {
namespace {

struct Server {
  std::mutex mutex;
  ChildProcess child;
  std::vector<std::string> command{"/proc/self/exe", "compile-server"};
  CompileLimits limits = kDefaultCompileLimits;
  std::string guards;
};

Server& server() {
  static Server s;
  return s;
}

/// The server's environment: the minimal one, with CUDA's compute cache off. NVRTC otherwise reads
/// and writes ~/.nv/ComputeCache, which holds the JIT output of every CUDA program of this user:
/// not ours to let a candidate's compile reach, and the guard would refuse it anyway.
std::vector<std::string> server_environment() {
  std::vector<std::string> env;
  for (auto& e : minimal_environment())
    if (e.rfind("CUDA_CACHE_", 0) != 0) env.push_back(e);
  env.push_back("CUDA_CACHE_DISABLE=1");
  return env;
}

/// The server's command line, with its CPU limit per compile.
std::vector<std::string> server_command(const Server& s) {
  std::vector<std::string> argv = s.command;
  argv.insert(argv.end(), {"--cpu-seconds", std::to_string(int(std::ceil(s.limits.seconds)))});
  return argv;
}

Status start(Server& s) {
  ChildOptions options;
  // Whoever kills the process that compiles (the watchdog kills the worker's group) kills the
  // compiler with it; and if that process dies any other way, the kernel sends the signal.
  options.own_process_group = false;
  options.die_with_parent = true;
  options.address_space_bytes = s.limits.memory_bytes;
  options.core_dumps = false;
  if (auto st = s.child.start(server_command(s), server_environment(), options); !st) return st;
  bool timed_out = false, eof = false;
  auto line = s.child.read_line(60, timed_out, eof);
  nlohmann::json msg = line ? nlohmann::json::parse(*line, nullptr, false) : nlohmann::json();
  if (!msg.is_object() || msg.value("event", "") != "ready") {
    std::string why = line ? (msg.is_object() ? msg.value("message", *line) : *line)
                           : timed_out ? "it did not answer within 60 s" : "it ended (" + s.child.reap() + ")";
    s.child.kill_now();
    return error("the compile sandbox (" + s.command[0] + " compile-server) could not start: " + why);
  }
  s.guards = msg.value("guards", "");
  spdlog::debug("compile sandbox {} ready: {}", s.child.pid(), s.guards);
  if (msg.contains("landlock_unavailable"))
    spdlog::info("compile sandbox: the file guard alone ({})", msg["landlock_unavailable"].get<std::string>());
  return ok();
}

}  // namespace

void to_json(nlohmann::json& j, const CompileRequest& r) {
  j = {{"source", r.source}, {"filename", r.filename}, {"name_expressions", r.name_expressions}, {"arch", r.arch}};
}

void from_json(const nlohmann::json& j, CompileRequest& r) {
  r.source = j.at("source").get<std::string>();
  r.filename = j.at("filename").get<std::string>();
  r.name_expressions = j.at("name_expressions").get<std::vector<std::string>>();
  r.arch = j.at("arch").get<std::string>();
}

std::string protocol_line(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

nlohmann::json reply_json(const CompileOutput& out, const std::vector<std::string>& refused) {
  nlohmann::json j{{"ok", out.ok}, {"log", out.log}, {"seconds", out.seconds}, {"cubin_bytes", out.cubin.size()},
                   {"refused", refused}, {"functions", nlohmann::json::array()}};
  for (auto& f : out.functions)
    j["functions"].push_back({{"name_expression", f.name_expression}, {"lowered_name", f.lowered_name},
                              {"registers", f.registers}, {"spill_stores", f.spill_stores},
                              {"spill_loads", f.spill_loads}, {"stack_bytes", f.stack_bytes},
                              {"static_smem_bytes", f.static_smem_bytes}});
  return j;
}

void set_compile_server_command(const std::vector<std::string>& argv) {
  std::lock_guard<std::mutex> lock(server().mutex);
  server().child.kill_now();
  server().command = argv;
}

void set_compile_limits(const CompileLimits& limits) {
  std::lock_guard<std::mutex> lock(server().mutex);
  server().child.kill_now();  // the next compile starts a server under these limits
  server().limits = limits;
}

CompileLimits compile_limits() {
  std::lock_guard<std::mutex> lock(server().mutex);
  return server().limits;
}

std::string compile_sandbox_guards() {
  std::lock_guard<std::mutex> lock(server().mutex);
  return server().guards;
}

Result<SandboxedCompile> compile_in_sandbox(const CompileRequest& req) {
  Server& s = server();
  std::lock_guard<std::mutex> lock(s.mutex);
  const CompileLimits& limits = s.limits;
  SandboxedCompile out;
  auto over = [&](CompileLimit limit, const std::string& what) -> Result<SandboxedCompile> {
    out.output = CompileOutput{};
    out.output.log = what;
    out.limit = limit;
    return out;
  };
  if (req.source.size() > limits.source_bytes)
    return over(CompileLimit::SourceSize, "the file is " + std::to_string(req.source.size()) + " bytes");
  std::string how;
  if (!s.child.running() || s.child.ended(how))  // a server that went over a limit ended after its answer
    if (auto st = start(s); !st) return st.error();
  auto crashed = [&](const std::string& why) -> Result<SandboxedCompile> {
    s.child.kill_now();
    out.output.ok = false;
    out.output.log = "the compiler " + why + " on this file";
    return out;
  };
  if (!s.child.write_all(protocol_line(nlohmann::json(req)))) return crashed("was gone (" + s.child.reap() + ")");
  bool timed_out = false, eof = false;
  auto line = s.child.read_line(limits.seconds, timed_out, eof);
  if (!line && timed_out) {
    s.child.kill_now();
    return over(CompileLimit::Time, "the compiler had not finished");
  }
  if (!line) {
    std::string why = s.child.reap();
    if (s.child.last_signal() == SIGXCPU)
      return over(CompileLimit::Time, "the compiler used up its CPU time");
    return crashed("died (" + why + ")");
  }
  nlohmann::json j = nlohmann::json::parse(*line, nullptr, false);
  if (!j.is_object()) return crashed("answered something unreadable");
  if (auto limit = limit_from_name(j.value("limit", "")); limit != CompileLimit::None) {
    s.child.kill_now();  // it ends after such an answer; make sure
    return over(limit, j.value("log", "the compiler stopped"));
  }
  const size_t bytes = j.value("cubin_bytes", size_t(0));
  if (bytes > limits.module_bytes) {
    s.child.kill_now();  // rather than read the module
    return over(CompileLimit::ModuleSize, "the compiled module is " + std::to_string(bytes) + " bytes");
  }
  auto cubin = s.child.read_bytes(bytes, limits.seconds, timed_out, eof);
  if (!cubin) return crashed("stopped in the middle of its answer");
  CompileOutput& o = out.output;
  o.ok = j.value("ok", false);
  o.log = j.value("log", "");
  o.seconds = j.value("seconds", 0.0);
  o.cubin.assign(cubin->begin(), cubin->end());
  for (auto& f : j.value("functions", nlohmann::json::array()))
    o.functions.push_back({f.value("name_expression", ""), f.value("lowered_name", ""), f.value("registers", -1),
                           f.value("spill_stores", 0), f.value("spill_loads", 0), f.value("stack_bytes", 0),
                           f.value("static_smem_bytes", 0)});
  out.refused = j.value("refused", std::vector<std::string>{});
  if (o.ok)
    if (auto data = initialised_data_bytes(o.cubin); data && *data > limits.initialised_data_bytes)
      return over(CompileLimit::InitialisedData,
                  "the compiled module holds " + std::to_string(*data) + " bytes of initialised data");
  return out;
}

}  // namespace ak
