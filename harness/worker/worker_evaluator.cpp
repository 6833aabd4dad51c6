#include "harness/worker/worker_evaluator.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <spdlog/spdlog.h>

#include "harness/process/worker_environment.hpp"
#include "harness/worker/worker_protocol.hpp"

namespace ak {
namespace {


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

/// The verdict settled before the counters pass, when the worker stopped in that pass: the
/// candidate had been judged, and what stopped the pass is no verdict on it.
Verdict without_counters(Verdict settled, const std::string& what) {
  settled.counters = HardwareCounters::unavailable_because("the worker " + what +
                                                           " during the counters pass: no readings (the worker was replaced)");
  settled.notes.push_back("the worker " + what + " during the counters pass, after the candidate was judged");
  return settled;
}

}  // namespace

WorkerEvaluator::WorkerEvaluator(Options o) : opt_(std::move(o)) {
  if (opt_.command.empty())
    opt_.command = {"/proc/self/exe", "worker", "--device", std::to_string(opt_.device), "--stage-timeout-s",
                    std::to_string(opt_.stage_timeout_s)};
  if (!opt_.output) opt_.output = [](const std::string& line) { spdlog::warn("{}", line); };
}

WorkerEvaluator::~WorkerEvaluator() { stop(false); }

Status WorkerEvaluator::start() {
  ChildOptions options;
  options.relay_output = opt_.output;
  options.relay_prefix = "worker " + std::to_string(opt_.device) + ": ";
  if (auto s = child_.start(opt_.command, opt_.environment.value_or(minimal_environment()), options); !s) return s;
  ++starts_;
  bool timed_out = false, eof = false;
  auto line = child_.read_line(opt_.startup_timeout_s, timed_out, eof, opt_.cancel);
  if (!line) {
    std::string why = timed_out ? "did not answer within " + std::to_string(int(opt_.startup_timeout_s)) + " s"
                                : "ended before it was ready (" + child_.reap() + ")";
    stop(true);
    return error("the worker (" + opt_.command[0] + ") " + why);
  }
  nlohmann::json msg = nlohmann::json::parse(*line, nullptr, false);
  if (msg.is_object() && msg.value("event", "") == "ready") {
    spdlog::info("worker {} ready on {}", child_.pid(), msg.value("gpu", "?"));
    return ok();
  }
  std::string why = msg.is_object() ? msg.value("message", "its first line was not 'ready': " + *line)
                                    : "its first line was not 'ready': " + *line;
  stop(true);
  return error(why);
}

void WorkerEvaluator::stop(bool kill_now) {
  // A polite worker leaves within a moment of "quit"; one that does not is killed.
  if (child_.running() && !kill_now && child_.write_all(protocol::quit_line())) child_.wait_exit(1.0);
  child_.kill_now();
}

Result<Verdict> WorkerEvaluator::evaluate(const EvalRequest& req) {
  if (!child_.running())
    if (auto s = start(); !s) return s.error();
  if (!child_.write_all(protocol::evaluate_line(req))) {
    std::string why = child_.reap();
    stop(true);
    return lost(Correctness::Crash, req, "start", "the worker was gone before the candidate arrived (" + why + ")");
  }
  std::string stage = "compile";
  std::optional<Verdict> settled;
  for (;;) {
    bool timed_out = false, eof = false;
    const double limit = stage == "baseline" ? std::max(opt_.stage_timeout_s, opt_.baseline_timeout_s) : opt_.stage_timeout_s;
    auto line = child_.read_line(limit, timed_out, eof, opt_.cancel);
    if (!line) {
      if (timed_out) {
        bool cancelled = opt_.cancel && opt_.cancel->load();
        stop(true);
        if (cancelled) return error("evaluation abandoned: the daemon is stopping");
        if (settled && stage == "counters")
          return without_counters(*settled, "ran past " + std::to_string(int(limit)) + " s and was killed");
        return lost(Correctness::Timeout, req, stage,
                    "ran past its limit of " + std::to_string(int(limit)) +
                        " s (a hang or an endless loop); the worker was killed");
      }
      std::string why = child_.reap();
      stop(true);
      if (opt_.cancel && opt_.cancel->load()) return error("evaluation abandoned: the daemon is stopping");
      if (settled && stage == "counters") return without_counters(*settled, "died (" + why + ")");
      return lost(Correctness::Crash, req, stage, "the worker died (" + why + ")");
    }
    nlohmann::json msg = nlohmann::json::parse(*line, nullptr, false);
    const std::string event = msg.is_object() ? msg.value("event", "") : "";
    if (event == "stage") {
      stage = msg.value("name", stage);
      continue;
    }
    if (event == "settled") {
      try {
        settled = msg.at("verdict").get<Verdict>();
      } catch (const std::exception&) {
        settled.reset();   // the final verdict, or the worker's end, will say what happened
      }
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
      std::string why = child_.reap();
      spdlog::warn("worker ended after a lost CUDA context ({})", why);
      stop(true);
    } else if (v.harness_error) {
      // Whatever failed the harness (memory it could not get, a reference process that broke)
      // may be state of this worker: the judgement again starts from a fresh worker, its
      // context and its reference processes new.
      spdlog::warn("worker {} is replaced after the harness failed in it: {}", child_.pid(), v.message.substr(0, 300));
      stop(false);
    }
    return v;
  }
}

}  // namespace ak
