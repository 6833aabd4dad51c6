#include "harness/process/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>

namespace ak {

Status ChildProcess::start(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                          const ChildOptions& options) {
  // A child that dies while we write to it must not take us with it: write_all returns false
  // (EPIPE) and the caller reports it. Process-wide, and so set by whoever starts a child.
  signal(SIGPIPE, SIG_IGN);
  kill_now();
  int in[2], out[2], err[2] = {-1, -1};
  auto fail = [&](const char* what) {
    const int e = errno;
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]})
      if (fd >= 0) ::close(fd);
    return error("cannot start " + argv[0] + " (" + what + "): " + std::strerror(e));
  };
  in[0] = in[1] = out[0] = out[1] = -1;
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return fail("pipes");
  if (options.relay_output && pipe2(err, O_CLOEXEC) != 0) return fail("pipes");
  // Everything execve needs is built before fork: the child only calls async-signal-safe functions.
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  // A limit above the hard one this process already runs under cannot be set: keep that one.
  rlimit address_space{};
  getrlimit(RLIMIT_AS, &address_space);
  if (options.address_space_bytes && (address_space.rlim_max == RLIM_INFINITY ||
                                      options.address_space_bytes < address_space.rlim_max))
    address_space.rlim_cur = address_space.rlim_max = options.address_space_bytes;
  const rlimit no_core{0, 0};
  pid_t pid = fork();
  if (pid < 0) return fail("fork");
  if (pid == 0) {
    if (options.own_process_group) setpgid(0, 0);
    if (options.die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(126);  // the parent died before the signal was armed
    }
    if (options.address_space_bytes && setrlimit(RLIMIT_AS, &address_space) != 0) _exit(125);
    if (!options.core_dumps) setrlimit(RLIMIT_CORE, &no_core);
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    if (err[1] >= 0) dup2(err[1], STDERR_FILENO);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  // Also from this side, so that a kill of the group right after start cannot miss the child.
  if (options.own_process_group) setpgid(pid, pid);
  ::close(in[0]);
  ::close(out[1]);
  pid_ = pid;
  own_group_ = options.own_process_group;
  to_ = in[1];
  from_ = out[0];
  pending_.clear();
  if (err[0] >= 0) {
    ::close(err[1]);
    relay_ = std::make_unique<OutputRelay>(err[0], options.relay_prefix, options.relay_output);
  }
  return ok();
}

bool ChildProcess::write_all(const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(to_, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

void ChildProcess::close_input() {
  if (to_ >= 0) ::close(to_);
  to_ = -1;
}

template <typename Enough>
bool ChildProcess::fill(double deadline_s, bool& timed_out, bool& eof, const std::atomic<bool>* cancel, Enough enough) {
  using Clock = std::chrono::steady_clock;
  timed_out = eof = false;
  const auto deadline = Clock::now() + std::chrono::duration<double>(deadline_s);
  while (!enough()) {
    if (cancel && cancel->load()) return timed_out = true, false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return timed_out = true, false;
    pollfd p{from_, POLLIN, 0};
    int r = poll(&p, 1, int(std::min<long long>(left, 100)));  // short slices: cancel is noticed
    if (r < 0 && errno != EINTR) return eof = true, false;
    if (r <= 0) continue;
    char buf[65536];
    ssize_t n = ::read(from_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return eof = true, false;
    pending_.append(buf, size_t(n));
  }
  return true;
}

std::optional<std::string> ChildProcess::read_line(double deadline_s, bool& timed_out, bool& eof,
                                                   const std::atomic<bool>* cancel) {
  if (!fill(deadline_s, timed_out, eof, cancel, [&] { return pending_.find('\n') != std::string::npos; }))
    return std::nullopt;
  const size_t nl = pending_.find('\n');
  std::string line = pending_.substr(0, nl);
  pending_.erase(0, nl + 1);
  return line;
}

std::optional<std::string> ChildProcess::read_bytes(size_t n, double deadline_s, bool& timed_out, bool& eof) {
  if (!fill(deadline_s, timed_out, eof, nullptr, [&] { return pending_.size() >= n; })) return std::nullopt;
  std::string bytes = pending_.substr(0, n);
  pending_.erase(0, n);
  return bytes;
}

bool ChildProcess::wait_exit(double seconds) {
  for (int i = 0; i < int(seconds * 50) && pid_ > 0; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) pid_ = -1;
    else usleep(20000);
  }
  return pid_ <= 0;
}

std::string ChildProcess::describe(int status) {
  last_signal_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

std::string ChildProcess::reap() {
  int status = 0;
  if (pid_ <= 0 || waitpid(pid_, &status, 0) != pid_) return "its exit status is unknown";
  kill_group_left_behind();
  return describe(status);
}

bool ChildProcess::ended(std::string& how) {
  int status = 0;
  if (pid_ <= 0 || waitpid(pid_, &status, WNOHANG) != pid_) return false;
  how = describe(status);
  kill_group_left_behind();
  kill_now();  // its pipes and its relay
  return true;
}

void ChildProcess::kill_group_left_behind() {
  // Right after the reap: the group's id cannot have been reused while one of its members lives.
  if (own_group_) kill(-pid_, SIGKILL);
  pid_ = -1;
}

void ChildProcess::kill_now() {
  if (pid_ > 0) {
    if (own_group_) kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  close_pipes();
  if (relay_) relay_->stop();
  relay_.reset();
}

void ChildProcess::close_pipes() {
  if (to_ >= 0) ::close(to_);
  if (from_ >= 0) ::close(from_);
  to_ = from_ = -1;
  pending_.clear();
}

std::string find_executable(const std::string& name, const std::string& path) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace ak
