#include "harness/worker/worker_main.hpp"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>

#include <spdlog/spdlog.h>

#include "common/atomic_write.hpp"
#include "harness/gpu/driver_call_times.hpp"
#include "harness/worker/worker_protocol.hpp"

namespace ak {
namespace {

/// The protocol owns the original stdout; anything else printed (by CUDA, by a library) goes to
/// stderr, where it cannot corrupt a reply.
FILE* take_stdout() {
  int fd = dup(STDOUT_FILENO);
  dup2(STDERR_FILENO, STDOUT_FILENO);
  return fdopen(fd, "w");
}

/// A crash of the worker is a candidate's doing or a harness bug: either way, leave a backtrace
/// in the log for whoever has to find out which.
void on_fatal_signal(int sig) {
  void* frames[64];
  int n = backtrace(frames, 64);
  const char head[] = "worker: fatal signal; backtrace:\n";
  (void)!write(STDERR_FILENO, head, sizeof head - 1);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  signal(sig, SIG_DFL);
  raise(sig);
}

void send(FILE* out, const std::string& line) {
  std::fputs(line.c_str(), out);
  std::fflush(out);
}

/// The driver calls' totals so far, where AUTOKERNEL_DRIVER_TIMES asks for them: after every
/// verdict, so a worker replaced or killed leaves what it measured.
void write_driver_call_times(int device) {
  const std::string path = driver_call_times_path(device);
  if (path.empty()) return;
  static bool warned = false;   // once a worker: the folder will not appear between verdicts
  if (auto s = write_file_atomic(path, driver_call_times_tsv(driver_call_times())); !s && !warned) {
    warned = true;
    spdlog::warn("worker: the driver calls' times could not be written to {}: {} (AUTOKERNEL_DRIVER_TIMES names a "
                 "folder that must exist)", path, s.error().message);
  }
}

}  // namespace

int run_worker(int device) {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) signal(sig, on_fatal_signal);
  FILE* out = take_stdout();
  auto harness = Harness::open(device);
  if (!harness) {
    send(out, protocol::unavailable_line(harness.error().message));
    return 2;
  }
  send(out, protocol::ready_line((*harness)->gpu().info().name));
  for (std::string line; std::getline(std::cin, line);) {
    nlohmann::json msg;
    try {
      msg = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      spdlog::error("worker: ignoring a request that is not JSON: {}", e.what());
      continue;
    }
    const std::string op = msg.value("op", "");
    if (op == "quit") return 0;
    if (op != "evaluate") {
      spdlog::error("worker: unknown op '{}'", op);
      continue;
    }
    EvalRequest req;
    try {
      req = msg.at("request").get<EvalRequest>();
    } catch (const std::exception& e) {
      spdlog::error("worker: malformed request: {}", e.what());
      continue;
    }
    Verdict v = (*harness)->evaluate(
        req, [&](const std::string& stage) { send(out, protocol::stage_line(stage)); },
        [&](const Verdict& settled) { send(out, protocol::settled_line(settled)); });
    send(out, protocol::verdict_line(v));
    write_driver_call_times(device);
    if (v.context_lost) {
      spdlog::warn("worker: the CUDA context is lost ({}); exiting so a fresh worker takes over", v.message);
      std::fflush(nullptr);
      _exit(3);  // no destructors: they would call into the broken context
    }
  }
  return 0;
}

}  // namespace ak
