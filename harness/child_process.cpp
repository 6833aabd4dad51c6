#include "harness/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace ak {

Status ChildProcess::start(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  kill_now();
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return error(std::string("cannot create pipes for ") + argv[0] + ": " + std::strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]);
    return error(std::string("cannot create pipes for ") + argv[0] + ": " + std::strerror(errno));
  }
  // Everything execve needs is built before fork: the child only calls async-signal-safe functions.
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) return error(std::string("cannot start ") + argv[0] + " (fork): " + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  pid_ = pid;
  to_ = in[1];
  from_ = out[0];
  pending_.clear();
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

std::string ChildProcess::reap() {
  int status = 0;
  if (pid_ <= 0 || waitpid(pid_, &status, 0) != pid_) return "its exit status is unknown";
  pid_ = -1;
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

void ChildProcess::kill_now() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  close_pipes();
}

void ChildProcess::close_pipes() {
  if (to_ >= 0) ::close(to_);
  if (from_ >= 0) ::close(from_);
  to_ = from_ = -1;
  pending_.clear();
}

}  // namespace ak
