#include "daemon/commands/foreground_command.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace ak {
namespace {

/// The signals that ask a foreground command to stop: passed on to the program it runs.
constexpr int kStopSignals[] = {SIGTERM, SIGINT, SIGHUP};

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_passed_on = 0;

/// A stop signal sent to autokernel alone (kill, a service manager) goes on to the program, and
/// autokernel keeps waiting for it. One the terminal sent (Ctrl-C) reached the program already:
/// it is in our process group, and the kernel marks such a signal with a positive si_code.
void pass_on(int sig, siginfo_t* info, void*) {
  if (info && info->si_code > 0) return;
  if (g_child > 0) {
    kill(pid_t(g_child), sig);
    g_passed_on = sig;
  }
}

/// Our handlers for the stop signals while a program runs; a signal ignored when we started
/// (nohup, a background job) stays ignored, for us and for the program.
class StopSignalsPassedOn {
 public:
  StopSignalsPassedOn() {
    for (size_t i = 0; i < std::size(kStopSignals); ++i) {
      sigaction(kStopSignals[i], nullptr, &old_[i]);
      if (old_[i].sa_handler == SIG_IGN) continue;
      struct sigaction sa {};
      sa.sa_sigaction = pass_on;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&sa.sa_mask);
      sigaction(kStopSignals[i], &sa, nullptr);
    }
  }
  ~StopSignalsPassedOn() { restore(); }
  /// The dispositions we started with (the program's, between fork and exec).
  void restore() const {
    for (size_t i = 0; i < std::size(kStopSignals); ++i) sigaction(kStopSignals[i], &old_[i], nullptr);
  }

 private:
  struct sigaction old_[std::size(kStopSignals)] {};
};

const char* signal_name(int sig) {
  return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kStopSignals) sigaddset(&set, s);
  return set;
}

}  // namespace

int run_foreground(const std::vector<std::string>& cmd, const std::vector<std::pair<std::string, std::string>>& env,
                   const char* who) {
  // The stop signals wait, blocked, until the child's pid is known to the handler.
  const sigset_t stops = stop_signal_set();
  sigset_t before;
  sigprocmask(SIG_BLOCK, &stops, &before);
  StopSignalsPassedOn handlers;
  g_passed_on = 0;
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    handlers.restore();
    // Killed outright (SIGKILL), autokernel cannot pass a stop on: the program is told then too.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(128 + SIGTERM);
    sigprocmask(SIG_SETMASK, &before, nullptr);
    for (auto& [name, value] : env) {
      const char* old = std::getenv(name.c_str());
      const bool prepend = name == "PYTHONPATH" && old && *old;
      setenv(name.c_str(), (prepend ? value + ":" + old : value).c_str(), 1);
    }
    std::vector<char*> argv;
    for (auto& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "autokernel %s: cannot run %s: %s\n", who, argv[0], std::strerror(errno));
    _exit(127);
  }
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &before, nullptr);
    std::fprintf(stderr, "autokernel %s: cannot start %s: %s\n", who, cmd[0].c_str(), std::strerror(errno));
    return 127;
  }
  g_child = pid;
  sigprocmask(SIG_SETMASK, &before, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  if (g_passed_on)
    std::fprintf(stderr, "autokernel %s: passed %s on to %s (pid %d) and waited for it to end\n", who,
                 signal_name(g_passed_on), cmd[0].c_str(), int(pid));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace ak
