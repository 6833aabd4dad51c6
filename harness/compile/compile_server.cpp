#include "harness/compile/compile_server.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include "harness/compile/compile_sandbox.hpp"
#include "harness/compile/file_guard.hpp"
#include "harness/compile/landlock.hpp"

namespace ak {
namespace {

/// The answer to a compile that ran out of memory, written before any compile: when it is
/// needed, nothing can be allocated.
std::string g_memory_reply;
int g_out_fd = -1;
int g_statm_fd = -1;           ///< /proc/self/statm, opened before the guards close /proc
uint64_t g_address_space = 0;  ///< RLIMIT_AS, as the server was started under it

/// The address space in use, read from the open statm with async-signal-safe calls only.
uint64_t address_space_in_use() {
  char buf[64];
  const ssize_t n = g_statm_fd >= 0 ? pread(g_statm_fd, buf, sizeof buf - 1, 0) : -1;
  if (n <= 0) return 0;
  uint64_t pages = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) pages = pages * 10 + uint64_t(buf[i] - '0');
  return pages * uint64_t(sysconf(_SC_PAGESIZE));
}

/// NVRTC's LLVM aborts ("LLVM ERROR: out of memory") when an allocation is refused under the
/// address-space limit; a null pointer it did not check faults. Either way, when at least half
/// of the limit is in use, answer "over the memory limit" and leave (the client starts a fresh
/// server); otherwise die of the signal, which the client reports as a crash.
void on_fatal_signal(int sig) {
  if (g_address_space && g_out_fd >= 0 && address_space_in_use() >= g_address_space / 2) {
    (void)!write(g_out_fd, g_memory_reply.data(), g_memory_reply.size());
    _exit(3);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

std::string memory_reply() {
  return protocol_line(
      nlohmann::json{{"ok", false}, {"limit", "memory"}, {"log", "the compiler ran out of memory"}, {"cubin_bytes", 0}});
}

/// RLIMIT_CPU counts the process's whole life: each compile gets `seconds` more than it has used.
void arm_cpu_limit(int seconds) {
  if (seconds <= 0) return;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  rlimit r{};
  getrlimit(RLIMIT_CPU, &r);
  rlim_t soft = rlim_t(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1 + seconds);
  if (r.rlim_max != RLIM_INFINITY && soft > r.rlim_max) soft = r.rlim_max;
  r.rlim_cur = soft;
  setrlimit(RLIMIT_CPU, &r);
}

void send(FILE* out, const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), out);
  std::fflush(out);
}

/// One compile of our own before any candidate's: NVRTC opens its builtins library and the
/// headers' folder on its first use, which the guards would then refuse.
void warm_up(const std::string& arch) {
  CompileRequest req{"#include <cuda_fp16.h>\n#include <cuda_bf16.h>\nextern \"C\" __global__ void ak_warm(float* y) { y[0] = 1.f; }\n",
                     "ak_warm.cu", {}, arch};
  (void)nvrtc_compile(req);
}

}  // namespace

int run_compile_server(const CompileServerLimits& limits) {
  // The protocol owns stdout; anything else printed goes to stderr.
  g_out_fd = dup(STDOUT_FILENO);
  FILE* out = fdopen(g_out_fd, "w");
  dup2(STDERR_FILENO, STDOUT_FILENO);
  g_memory_reply = memory_reply();
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) g_address_space = as.rlim_cur;
  g_statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS}) signal(sig, on_fatal_signal);
  const std::string root = cuda_include_dir();
  warm_up("sm_90a");
  nlohmann::json ready{{"event", "ready"}};
  if (chdir(root.c_str()) != 0) {
    send(out, protocol_line(nlohmann::json{{"event", "unavailable"}, {"message", "cannot enter " + root}}));
    return 2;
  }
  // NVRTC looks at $PWD for the working folder: it must name the one we are in now.
  setenv("PWD", root.c_str(), 1);
  std::string guards = "file guard on " + root;
  if (auto s = restrict_filesystem_to(root); s) guards += ", Landlock";
  else ready["landlock_unavailable"] = s.error().message;
  enable_file_guard(root);
  ready["guards"] = guards;
  send(out, protocol_line(ready));
  for (std::string line; std::getline(std::cin, line);) {
    CompileRequest req;
    try {
      req = nlohmann::json::parse(line).get<CompileRequest>();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "compile-server: ignoring a request that cannot be read: %s\n", e.what());
      continue;
    }
    take_refused_paths();
    arm_cpu_limit(limits.cpu_seconds);
    auto compiled = nvrtc_compile(req);
    if (compiled && compiled->out_of_memory) {
      send(out, g_memory_reply);
      return 3;  // NVRTC is not to be trusted after it ran out of memory
    }
    CompileOutput o = compiled ? *compiled : CompileOutput{};
    if (!compiled) o.log = compiled.error().message;
    send(out, protocol_line(reply_json(o, take_refused_paths())));
    send(out, std::string(o.cubin.begin(), o.cubin.end()));
  }
  return 0;
}

}  // namespace ak
