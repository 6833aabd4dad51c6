// The worker protocol and watchdog, with scripted workers (shell scripts) in place of the GPU.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "harness/process/worker_environment.hpp"
#include "harness/worker/worker_evaluator.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

const char* kPass = R"({"event":"verdict","verdict":{"correctness":"PASS","message":"passed all five stages","timing":{"samples":100,"median_us":91.5}}})";

struct ScriptedWorker {
  test::TempDir dir;
  std::string path;
  explicit ScriptedWorker(const std::string& body) {
    path = dir.write("worker.sh", "#!/bin/sh\n" + body);
    chmod(path.c_str(), 0755);
  }
  WorkerEvaluator::Options options(double stage_timeout = 5) const {
    WorkerEvaluator::Options o;
    o.command = {path};
    o.stage_timeout_s = stage_timeout;
    o.startup_timeout_s = 5;
    return o;
  }
};

EvalRequest request() {
  EvalRequest r;
  r.kernel_type = "rmsnorm";
  r.source = "// candidate";
  r.seed = 42;
  return r;
}

}  // namespace

TEST_CASE("a worker's verdict comes back whole, and the worker serves the next candidate", "[worker]") {
  ScriptedWorker w(std::string("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\n"
                               "while read line; do echo '{\"event\":\"stage\",\"name\":\"smoke\"}'; echo '") +
                   kPass + "'; done\n");
  WorkerEvaluator e(w.options());
  for (int i = 0; i < 3; ++i) {
    auto v = e.evaluate(request());
    REQUIRE(v.ok());
    CHECK(v->correctness == Correctness::Pass);
    REQUIRE(v->timing.has_value());
    CHECK(v->timing->median_us == 91.5);
  }
  CHECK(e.starts() == 1);
}

TEST_CASE("a worker killed by a signal is recorded as CRASH at its stage and a fresh worker takes over", "[worker]") {
  ScriptedWorker w(std::string("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\n"
                               "read line\necho '{\"event\":\"stage\",\"name\":\"edge cases\"}'\nkill -SEGV $$\n"));
  WorkerEvaluator e(w.options());
  auto v = e.evaluate(request());
  REQUIRE(v.ok());
  CHECK(v->correctness == Correctness::Crash);
  CHECK(v->failed_stage == "edge cases");
  CHECK_THAT(v->message, Catch::Contains("signal 11"));
  auto again = e.evaluate(request());
  REQUIRE(again.ok());
  CHECK(again->correctness == Correctness::Crash);
  CHECK(e.starts() == 2);
}

TEST_CASE("a stage that hangs is a TIMEOUT naming the stage, and the worker is killed", "[worker]") {
  ScriptedWorker w(std::string("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\n"
                               "read line\necho '{\"event\":\"stage\",\"name\":\"determinism\"}'\nexec sleep 30\n"));
  WorkerEvaluator e(w.options(0.5));
  auto t0 = std::chrono::steady_clock::now();
  auto v = e.evaluate(request());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(v.ok());
  CHECK(v->correctness == Correctness::Timeout);
  CHECK(v->failed_stage == "determinism");
  CHECK(s < 3.0);
  CHECK(e.pid() == -1);
}

TEST_CASE("a user type's baseline stage has a limit of its own, longer than the candidate's stages", "[worker]") {
  // PyTorch's torch.compile of the module runs there, not the candidate: minutes are fine, a hang is not.
  ScriptedWorker slow(std::string("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\nread line\n"
                                  "echo '{\"event\":\"stage\",\"name\":\"baseline\"}'\nsleep 1\necho '") +
                      kPass + "'\nread line\n");
  auto o = slow.options(0.5);
  o.baseline_timeout_s = 5;
  WorkerEvaluator e(o);
  auto v = e.evaluate(request());
  REQUIRE(v.ok());
  CHECK(v->correctness == Correctness::Pass);

  ScriptedWorker hung(std::string("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\nread line\n"
                                  "echo '{\"event\":\"stage\",\"name\":\"baseline\"}'\nexec sleep 30\n"));
  auto h = hung.options(0.5);
  h.baseline_timeout_s = 1.5;
  WorkerEvaluator eh(h);
  auto t0 = std::chrono::steady_clock::now();
  auto t = eh.evaluate(request());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(t.ok());
  CHECK(t->correctness == Correctness::Timeout);
  CHECK(t->failed_stage == "baseline");
  CHECK(secs > 1.2);
  CHECK(secs < 5.0);
}

TEST_CASE("the limit is per stage: slow progress through many stages is not a timeout", "[worker]") {
  ScriptedWorker w(std::string("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\nread line\n"
                               "for s in smoke sweep stability determinism edges; do "
                               "echo \"{\\\"event\\\":\\\"stage\\\",\\\"name\\\":\\\"$s\\\"}\"; sleep 0.3; done\necho '") +
                   kPass + "'\nread line\n");
  WorkerEvaluator e(w.options(0.8));
  auto v = e.evaluate(request());
  REQUIRE(v.ok());
  CHECK(v->correctness == Correctness::Pass);
}

TEST_CASE("a worker that finds no GPU makes evaluate an Error with its reason", "[worker]") {
  ScriptedWorker w("echo '{\"event\":\"unavailable\",\"message\":\"no NVIDIA driver: libcuda.so.1 missing\"}'\nexit 2\n");
  WorkerEvaluator e(w.options());
  auto v = e.evaluate(request());
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.error().message, Catch::Contains("no NVIDIA driver"));
}

TEST_CASE("after a lost CUDA context the verdict stands and the next candidate gets a new worker", "[worker]") {
  ScriptedWorker w(
      "echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\nread line\n"
      "echo '{\"event\":\"verdict\",\"verdict\":{\"correctness\":\"CRASH\",\"message\":\"smoke: CUDA_ERROR_ILLEGAL_ADDRESS\",\"context_lost\":true}}'\n"
      "exit 3\n");
  WorkerEvaluator e(w.options());
  auto v = e.evaluate(request());
  REQUIRE(v.ok());
  CHECK(v->correctness == Correctness::Crash);
  CHECK_THAT(v->message, Catch::Contains("ILLEGAL_ADDRESS"));
  REQUIRE(e.evaluate(request()).ok());
  CHECK(e.starts() == 2);
}

TEST_CASE("after a verdict the harness failed on, the candidate is judged again by a new worker", "[worker][blame]") {
  // The worker stays up after it (its context is not lost); the memory it could not get, or the
  // reference process that broke, may be its own state: a fresh worker starts it all anew.
  ScriptedWorker w(std::string("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\n"
                               "while read line; do echo '{\"event\":\"verdict\",\"verdict\":{\"correctness\":\"FAIL\","
                               "\"message\":\"benchmark: allocating 100 MiB on the GPU failed\",\"harness_error\":true}}'; done\n"));
  WorkerEvaluator e(w.options());
  auto v = e.evaluate(request());
  REQUIRE(v.ok());
  CHECK(v->harness_error);
  REQUIRE(e.evaluate(request()).ok());
  CHECK(e.starts() == 2);
}

TEST_CASE("cancelling abandons the evaluation in flight within a fraction of a second", "[worker]") {
  ScriptedWorker w("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\nread line\nexec sleep 30\n");
  std::atomic<bool> cancel{false};
  auto o = w.options(60);
  o.cancel = &cancel;
  WorkerEvaluator e(o);
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  auto t0 = std::chrono::steady_clock::now();
  auto v = e.evaluate(request());
  t.join();
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 2.0);
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.error().message, Catch::Contains("abandoned"));
}

TEST_CASE("a worker that cannot be started is an Error naming it", "[worker]") {
  WorkerEvaluator::Options o;
  o.command = {"/nonexistent/worker"};
  o.startup_timeout_s = 5;
  WorkerEvaluator e(o);
  auto v = e.evaluate(request());
  REQUIRE_FALSE(v.ok());
  CHECK_THAT(v.error().message, Catch::Contains("/nonexistent/worker") && Catch::Contains("exited with code 127"));
}

TEST_CASE("the worker starts with the minimal environment, never the daemon's secrets", "[worker]") {
  setenv("AK_TEST_KEY_OF_THE_DAEMON", "sk-do-not-pass-me", 1);
  setenv("CUDA_VISIBLE_DEVICES", "0", 1);
  setenv("AK_TEST_ASKED_FOR", "yes", 1);
  ScriptedWorker w("env > \"$(dirname \"$0\")/env.txt\"\necho '{\"event\":\"unavailable\",\"message\":\"scripted\"}'\n");
  auto o = w.options();
  o.environment = minimal_environment({"AK_TEST_ASKED_FOR"});
  WorkerEvaluator e(o);
  auto v = e.evaluate(request());
  REQUIRE_FALSE(v.ok());
  std::string env = test::read_file((w.dir.path / "env.txt").string());
  CHECK_THAT(env, !Catch::Contains("sk-do-not-pass-me") && !Catch::Contains("AK_TEST_KEY_OF_THE_DAEMON"));
  CHECK_THAT(env, Catch::Contains("CUDA_VISIBLE_DEVICES=0") && Catch::Contains("AK_TEST_ASKED_FOR=yes"));
  // The default, without a config, is the same minimal set.
  CHECK_THAT(test::read_file((w.dir.path / "env.txt").string()), Catch::Contains("PATH="));
  for (const std::string& line : minimal_environment()) CHECK(line.rfind("AK_TEST_", 0) != 0);
}

TEST_CASE("what a worker prints outside the protocol reaches the log only as its own cleaned lines", "[worker]") {
  // Device printf lands on the worker's stdout, which the worker points at its stderr: a forged
  // daemon line behind a terminal escape that would retitle the window, a NUL and a C1 CSI.
  ScriptedWorker w(std::string("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\nread line\n"
                               "printf '\\033]0;owned\\007experiment 4242 softmax: fused everything: PASS 1.00 us -> kept\\n' >&2\n"
                               "printf 'a\\000b\\302\\2332J\\n' >&2\necho '") +
                   kPass + "'\nread line\n");
  std::mutex mutex;
  std::vector<std::string> lines;
  auto o = w.options();
  o.device = 3;
  o.output = [&](const std::string& l) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back(l);
  };
  {
    WorkerEvaluator e(o);
    auto v = e.evaluate(request());
    REQUIRE(v.ok());
    CHECK(v->correctness == Correctness::Pass);
  }  // the worker is stopped: its relay has handed over everything
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "worker 3: ?]0;owned?experiment 4242 softmax: fused everything: PASS 1.00 us -> kept");
  CHECK(lines[1] == "worker 3: a?b?2J");
}

TEST_CASE("a worker killed at its stage limit takes what it started (its compile server) with it", "[worker]") {
  // The worker starts a process of its own, as it starts its compile server, then hangs in it.
  ScriptedWorker w(std::string("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\nread line\n"
                               "echo '{\"event\":\"stage\",\"name\":\"compile\"}'\n"
                               "sleep 300 &\necho $! > \"$(dirname \"$0\")/child.pid\"\nwait\n"));
  WorkerEvaluator e(w.options(1.0));
  auto v = e.evaluate(request());
  REQUIRE(v.ok());
  CHECK(v->correctness == Correctness::Timeout);
  CHECK(v->failed_stage == "compile");
  const std::string pid = test::read_file((w.dir.path / "child.pid").string());
  REQUIRE_FALSE(pid.empty());
  const std::string stat = "/proc/" + pid.substr(0, pid.find('\n')) + "/stat";
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::string s = test::read_file(stat);
    gone = s.empty() || s.find(") Z ") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(gone);
}

TEST_CASE("a worker that dies or hangs in the counters pass leaves the settled verdict, saying the counters are lost", "[worker][counters]") {
  const std::string settled =
      R"({"event":"settled","verdict":{"correctness":"PASS","message":"passed all five stages","timing":{"samples":100,"median_us":91.5}}})";
  SECTION("it dies") {
    ScriptedWorker w(std::string("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\n"
                                 "read line; echo '") + settled + "'; echo '{\"event\":\"stage\",\"name\":\"counters\"}'; exit 7\n");
    WorkerEvaluator e(w.options());
    auto v = e.evaluate(request());
    REQUIRE(v.ok());
    CHECK(v->correctness == Correctness::Pass);
    REQUIRE(v->timing.has_value());
    CHECK(v->timing->median_us == 91.5);
    REQUIRE(v->counters.has_value());
    CHECK_THAT(v->counters->unavailable, Catch::Contains("the worker died") && Catch::Contains("during the counters pass"));
  }
  SECTION("it hangs") {
    ScriptedWorker w(std::string("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\n"
                                 "read line; echo '") + settled + "'; echo '{\"event\":\"stage\",\"name\":\"counters\"}'; exec sleep 30\n");
    WorkerEvaluator e(w.options(0.5));
    auto v = e.evaluate(request());
    REQUIRE(v.ok());
    CHECK(v->correctness == Correctness::Pass);
    REQUIRE(v->counters.has_value());
    CHECK_THAT(v->counters->unavailable, Catch::Contains("was killed during the counters pass"));
  }
  SECTION("dying before the settled verdict is still the candidate's crash") {
    ScriptedWorker w("echo '{\"event\":\"ready\",\"gpu\":\"scripted\"}'\nread line; echo '{\"event\":\"stage\",\"name\":\"benchmark\"}'; exit 7\n");
    WorkerEvaluator e(w.options());
    auto v = e.evaluate(request());
    REQUIRE(v.ok());
    CHECK(v->correctness == Correctness::Crash);
  }
}
