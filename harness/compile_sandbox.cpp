#include "harness/compile_sandbox.hpp"

#include <mutex>

#include <spdlog/spdlog.h>

#include "harness/child_process.hpp"
#include "harness/worker_environment.hpp"

namespace ak {
namespace {

/// A compile that runs longer than this is a candidate that makes the compiler loop.
constexpr double kCompileLimitS = 120;

struct Server {
  std::mutex mutex;
  ChildProcess child;
  std::vector<std::string> command{"/proc/self/exe", "compile-server"};
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

Status start(Server& s) {
  if (auto st = s.child.start(s.command, server_environment()); !st) return st;
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

std::string compile_sandbox_guards() {
  std::lock_guard<std::mutex> lock(server().mutex);
  return server().guards;
}

Result<SandboxedCompile> compile_in_sandbox(const CompileRequest& req) {
  Server& s = server();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.child.running())
    if (auto st = start(s); !st) return st.error();
  SandboxedCompile out;
  auto crashed = [&](const std::string& why) -> Result<SandboxedCompile> {
    s.child.kill_now();
    out.output.ok = false;
    out.output.log = "the compiler " + why + " on this file";
    return out;
  };
  if (!s.child.write_all(nlohmann::json(req).dump() + "\n")) return crashed("was gone (" + s.child.reap() + ")");
  bool timed_out = false, eof = false;
  auto line = s.child.read_line(kCompileLimitS, timed_out, eof);
  if (!line) return crashed(timed_out ? "ran past " + std::to_string(int(kCompileLimitS)) + " s" : "died (" + s.child.reap() + ")");
  nlohmann::json j = nlohmann::json::parse(*line, nullptr, false);
  if (!j.is_object()) return crashed("answered something unreadable");
  const size_t bytes = j.value("cubin_bytes", size_t(0));
  auto cubin = s.child.read_bytes(bytes, kCompileLimitS, timed_out, eof);
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
  return out;
}

}  // namespace ak
