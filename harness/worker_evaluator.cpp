#include "harness/worker_evaluator.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "harness/worker_protocol.hpp"

namespace ak {
namespace {

using Clock = std::chrono::steady_clock;

bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

Verdict lost(Correctness c, const EvalRequest& req, const std::string& stage, const std::string& msg) {
  Verdict v;
  v.correctness = c;
  v.kernel_type = req.kernel_type;
  v.dtype = req.dtype;
  v.failed_stage = stage;
  v.message = stage + ": " + msg;
  v.seed = req.seed;
  v.stages.push_back({stage, false, 0, msg});
  return v;
}

}  // namespace

WorkerEvaluator::WorkerEvaluator(Options o) : opt_(std::move(o)) {
  // A worker that dies while we write to it must not take us with it.
  signal(SIGPIPE, SIG_IGN);
  if (opt_.command.empty()) opt_.command = {"/proc/self/exe", "worker", "--device", std::to_string(opt_.device)};
}

WorkerEvaluator::~WorkerEvaluator() { stop(false); }

Status WorkerEvaluator::start() {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
    return error(std::string("cannot create pipes for the worker: ") + std::strerror(errno));
  pid_t pid = fork();
  if (pid < 0) return error(std::string("cannot start the worker (fork): ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);  // Ctrl-C in a terminal is for the daemon, which then stops its worker itself
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    std::vector<char*> argv;
    for (auto& a : opt_.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  pid_ = pid;
  to_worker_ = in[1];
  from_worker_ = out[0];
  pending_.clear();
  ++starts_;
  bool timed_out = false, eof = false;
  auto line = read_line(opt_.startup_timeout_s, timed_out, eof);
  if (!line) {
    std::string why = timed_out ? "did not answer within " + std::to_string(int(opt_.startup_timeout_s)) + " s"
                                : "ended before it was ready (" + reap() + ")";
    stop(true);
    return error("the worker (" + opt_.command[0] + ") " + why);
  }
  nlohmann::json msg = nlohmann::json::parse(*line, nullptr, false);
  if (msg.value("event", "") == "ready") {
    spdlog::info("worker {} ready on {}", pid_, msg.value("gpu", "?"));
    return ok();
  }
  std::string why = msg.value("message", "its first line was not 'ready': " + *line);
  stop(true);
  return error(why);
}

void WorkerEvaluator::stop(bool kill_now) {
  if (pid_ > 0 && !kill_now) {
    write_all(to_worker_, protocol::quit_line());
    // A polite worker leaves within a moment of "quit"; one that does not is killed.
    for (int i = 0; i < 50 && pid_ > 0; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) pid_ = -1;
      else usleep(20000);
    }
  }
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (to_worker_ >= 0) ::close(to_worker_);
  if (from_worker_ >= 0) ::close(from_worker_);
  pid_ = -1;
  to_worker_ = from_worker_ = -1;
}

std::string WorkerEvaluator::reap() {
  int status = 0;
  if (pid_ <= 0 || waitpid(pid_, &status, 0) != pid_) return "its exit status is unknown";
  pid_ = -1;
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with code " + std::to_string(WEXITSTATUS(status));
}

std::optional<std::string> WorkerEvaluator::read_line(double deadline_s, bool& timed_out, bool& eof) {
  timed_out = eof = false;
  const auto deadline = Clock::now() + std::chrono::duration<double>(deadline_s);
  for (;;) {
    if (size_t nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    if (opt_.cancel && opt_.cancel->load()) {
      timed_out = true;
      return std::nullopt;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      return std::nullopt;
    }
    pollfd p{from_worker_, POLLIN, 0};
    int r = poll(&p, 1, int(std::min<long long>(left, 100)));  // short slices: cancel is noticed
    if (r < 0 && errno != EINTR) {
      eof = true;
      return std::nullopt;
    }
    if (r <= 0) continue;
    char buf[65536];
    ssize_t n = ::read(from_worker_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
      return std::nullopt;
    }
    pending_.append(buf, size_t(n));
  }
}

Result<Verdict> WorkerEvaluator::evaluate(const EvalRequest& req) {
  if (pid_ <= 0)
    if (auto s = start(); !s) return s.error();
  if (!write_all(to_worker_, protocol::evaluate_line(req))) {
    std::string why = reap();
    stop(true);
    return lost(Correctness::Crash, req, "start", "the worker was gone before the candidate arrived (" + why + ")");
  }
  std::string stage = "compile";
  for (;;) {
    bool timed_out = false, eof = false;
    auto line = read_line(opt_.stage_timeout_s, timed_out, eof);
    if (!line) {
      if (timed_out) {
        bool cancelled = opt_.cancel && opt_.cancel->load();
        stop(true);
        if (cancelled) return error("evaluation abandoned: the daemon is stopping");
        return lost(Correctness::Timeout, req, stage,
                    "ran past its limit of " + std::to_string(int(opt_.stage_timeout_s)) +
                        " s (a hang or an endless loop); the worker was killed");
      }
      std::string why = reap();
      stop(true);
      if (opt_.cancel && opt_.cancel->load()) return error("evaluation abandoned: the daemon is stopping");
      return lost(Correctness::Crash, req, stage, "the worker died (" + why + ")");
    }
    nlohmann::json msg = nlohmann::json::parse(*line, nullptr, false);
    const std::string event = msg.is_object() ? msg.value("event", "") : "";
    if (event == "stage") {
      stage = msg.value("name", stage);
      continue;
    }
    if (event != "verdict") {
      spdlog::warn("worker said something unexpected: {}", line->substr(0, 200));
      continue;
    }
    Verdict v;
    try {
      v = msg.at("verdict").get<Verdict>();
    } catch (const std::exception& e) {
      stop(true);
      return lost(Correctness::Crash, req, stage, std::string("the worker's verdict could not be read: ") + e.what());
    }
    if (v.context_lost) {
      // The worker exits by itself after a sticky error; the next request starts a fresh one.
      std::string why = reap();
      spdlog::warn("worker ended after a lost CUDA context ({})", why);
      stop(true);
    }
    return v;
  }
}

}  // namespace ak
