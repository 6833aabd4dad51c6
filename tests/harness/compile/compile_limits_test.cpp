// The bounds on a candidate's compile, with real NVRTC compiles in real compile servers: a file
// over a limit is a COMPILE_ERROR naming it, within bounded time and memory, and no compile
// server outlives the process that started it. Small limits keep these fast.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "harness/compile/candidate_compile.hpp"
#include "harness/compile/compile_sandbox.hpp"
#include "harness/compile/module_size.hpp"
#include "harness/process/child_process.hpp"
#include "harness/process/worker_environment.hpp"
#include "kernels_cuda/registry.hpp"
#include "tests/support.hpp"

using namespace ak;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

/// Limits for one test; the defaults come back when it ends.
struct ScopedLimits {
  explicit ScopedLimits(const CompileLimits& l) { set_compile_limits(l); }
  ~ScopedLimits() { set_compile_limits(kDefaultCompileLimits); }
};

std::string starter_plus(const std::string& lines) {
  std::string s = rmsnorm_spec().starter_source();
  const std::string anchor = "#include <cuda_fp16.h>\n";
  return s.insert(s.find(anchor) + anchor.size(), lines + "\n");
}

/// 2^40 distinct instantiations: the compiler never finishes.
const std::string kTemplateBomb =
    "template <int N, int K> struct AkBomb { static constexpr int v = AkBomb<N - 1, 2 * K>::v + AkBomb<N - 1, 2 * K + 1>::v; };\n"
    "template <int K> struct AkBomb<0, K> { static constexpr int v = 1; };\n"
    "__device__ int ak_boom = AkBomb<40, 0>::v;\n";

/// An initialised array of `bytes`: the whole of it goes into the module.
std::string initialised_array(size_t bytes) {
  return "__device__ unsigned char ak_table[" + std::to_string(bytes) + "] = {1, 2, 3};\n";
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

CandidateCompile compile(const std::string& source) {
  auto c = compile_candidate(rmsnorm_spec(), source, "rmsnorm.cu", "sm_90a");
  REQUIRE(c.ok());
  return *c;
}

/// The parent pid and the state letter of `pid` from /proc; ppid -1 when there is no such process.
std::pair<pid_t, char> proc_parent(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 4 >= stat.size()) return {-1, '?'};
  char state = stat[close + 2];
  pid_t ppid = pid_t(std::atol(stat.c_str() + close + 4));
  return {ppid, state};
}

/// The children of `parent` whose command line contains `word`.
std::vector<pid_t> children_named(pid_t parent, const std::string& word) {
  std::vector<pid_t> found;
  for (auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = pid_t(std::atol(name.c_str()));
    if (proc_parent(pid).first != parent) continue;
    std::string cmdline = test::read_file("/proc/" + name + "/cmdline");
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    if (cmdline.find(word) != std::string::npos) found.push_back(pid);
  }
  return found;
}

/// True when `pid` has ended (gone, or a zombie that init has yet to collect) within `seconds`.
bool ends_within(pid_t pid, double seconds) {
  const auto t0 = Clock::now();
  do {
    auto [ppid, state] = proc_parent(pid);
    if (ppid == -1 || state == 'Z' || state == 'X') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (seconds_since(t0) < seconds);
  return false;
}

/// Starts `autokernel compile` on a file that never finishes compiling, and returns its compile
/// server's pid once that is at work.
pid_t start_endless_compile(ChildProcess& client, const test::TempDir& dir) {
  const std::string file = dir.write("bomb.cu", starter_plus(kTemplateBomb));
  REQUIRE(client.start({test::autokernel_binary(), "compile", file, "--kernel", "rmsnorm"}, minimal_environment()));
  const auto t0 = Clock::now();
  std::vector<pid_t> servers;
  while (servers.empty() && seconds_since(t0) < 30) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    servers = children_named(client.pid(), "compile-server");
  }
  REQUIRE(servers.size() == 1);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // warmed up, and into the bomb
  REQUIRE_FALSE(ends_within(servers[0], 0));
  return servers[0];
}

}  // namespace

TEST_CASE("the compile's time limit is shorter than the stage watchdog, configured or not", "[compile-limits]") {
  CHECK(kDefaultCompileLimits.seconds < kDefaultStageTimeoutS);
  for (double stage : {1.0, 10.0, 60.0, 600.0}) CHECK(compile_limits_within(stage).seconds < stage);
  CHECK(compile_limits_within(600).seconds == kDefaultCompileLimits.seconds);
}

TEST_CASE("an exponential template instantiation is a COMPILE_ERROR naming the time limit, in bounded time",
          "[compile-limits][sandbox]") {
  CompileLimits l;
  l.seconds = 3;
  ScopedLimits scoped(l);
  const auto t0 = Clock::now();
  auto c = compile(starter_plus(kTemplateBomb));
  INFO(c.message);
  CHECK_FALSE(c.ok);
  CHECK_THAT(c.message, Catch::Contains("over the time limit (3 s)"));
  CHECK(seconds_since(t0) < 3 + 15);   // the limit, and a fresh server's start
  // The server that ran past the limit is gone; the next file compiles in a fresh one.
  auto next = compile(rmsnorm_spec().starter_source());
  INFO(next.message);
  CHECK(next.ok);
}

TEST_CASE("a huge initialised array is a COMPILE_ERROR naming the memory limit, the compiler bounded in memory",
          "[compile-limits][sandbox]") {
  CompileLimits l;
  l.memory_bytes = 1ull << 30;
  l.seconds = 120;   // the memory limit must come first
  ScopedLimits scoped(l);
  const auto t0 = Clock::now();
  auto c = compile(starter_plus(initialised_array(size_t(1) << 30)));
  INFO(c.message);
  CHECK_FALSE(c.ok);
  CHECK_THAT(c.message, Catch::Contains("over the memory limit (1024 MiB)"));
  CHECK(c.output.log == "the compiler ran out of memory");
  CHECK(seconds_since(t0) < 60);
  auto next = compile(rmsnorm_spec().starter_source());
  INFO(next.message);
  CHECK(next.ok);
}

TEST_CASE("a module with more initialised data than the limit is a COMPILE_ERROR naming it", "[compile-limits][sandbox]") {
  CompileLimits l;
  l.initialised_data_bytes = 256 << 10;
  ScopedLimits scoped(l);
  auto small = compile(starter_plus(initialised_array(200 << 10)));
  INFO(small.message);
  CHECK(small.ok);
  auto big = compile(starter_plus(initialised_array(300 << 10)));
  INFO(big.message);
  CHECK_FALSE(big.ok);
  CHECK_THAT(big.message, Catch::Contains("over the initialised data limit (256 KiB)"));
  CHECK_THAT(big.output.log, Catch::Contains("bytes of initialised data"));
  CHECK(big.output.cubin.empty());
}

TEST_CASE("a module larger than the limit is a COMPILE_ERROR naming it", "[compile-limits][sandbox]") {
  CompileLimits l;
  l.module_bytes = 64 << 10;
  ScopedLimits scoped(l);
  auto c = compile(starter_plus(initialised_array(100 << 10)));
  INFO(c.message);
  CHECK_FALSE(c.ok);
  CHECK_THAT(c.message, Catch::Contains("over the module size limit (64 KiB)"));
}

TEST_CASE("a file over the source size limit is refused before it is compiled", "[compile-limits][sandbox]") {
  CompileLimits l;
  l.source_bytes = 64 << 10;
  ScopedLimits scoped(l);
  auto c = compile(starter_plus("// " + std::string(70 << 10, 'x')));
  INFO(c.message);
  CHECK_FALSE(c.ok);
  CHECK_THAT(c.message, Catch::Contains("over the source size limit (64 KiB)"));
  // The sandbox holds the same line for any caller.
  auto direct = compile_in_sandbox(CompileRequest{std::string(70 << 10, ' '), "big.cu", {}, "sm_90a"});
  REQUIRE(direct.ok());
  CHECK(direct->limit == CompileLimit::SourceSize);
  CHECK_FALSE(direct->output.ok);
}

TEST_CASE("the initialised data of a module is read from its sections", "[compile-limits]") {
  CompileRequest req{"__device__ unsigned char t[100000] = {1};\n__constant__ int c[1000] = {2};\n"
                     "extern \"C\" __global__ void k(unsigned char* y) { y[0] = t[y[1]] + c[y[2]]; }\n",
                     "data.cu", {}, "sm_90a"};
  auto out = nvrtc_compile(req);
  REQUIRE(out.ok());
  REQUIRE(out->ok);
  auto bytes = initialised_data_bytes(out->cubin);
  REQUIRE(bytes.has_value());
  CHECK(*bytes >= 100000 + 4000);
  CHECK(*bytes < 100000 + 4000 + 16384);
  CHECK_FALSE(initialised_data_bytes(std::vector<char>(100, 'x')).has_value());
}

TEST_CASE("a compile server dies with the process that started it when that process is killed alone",
          "[compile-limits][sandbox]") {
  test::TempDir dir;
  ChildProcess client;
  const pid_t server = start_endless_compile(client, dir);
  // SIGKILL to the client only, as the OOM killer or a user would: the parent-death signal.
  REQUIRE(kill(client.pid(), SIGKILL) == 0);
  CHECK(ends_within(server, 5));
}

TEST_CASE("a compile server dies with its client's process group, as the watchdog kills a worker",
          "[compile-limits][sandbox]") {
  test::TempDir dir;
  ChildProcess client;
  const pid_t server = start_endless_compile(client, dir);
  client.kill_now();   // what WorkerEvaluator does to a worker past its stage limit
  CHECK(ends_within(server, 5));
}
