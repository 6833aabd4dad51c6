// The loop with several GPUs: experiments in flight at once, results arriving out of order,
// a kill with experiments in flight, and what `status` reads meanwhile.
#include <catch2/catch.hpp>

#include <set>

#include <nlohmann/json.hpp>

#include "common/atomic_write.hpp"
#include "common/file_text.hpp"
#include "daemon/loop/run_loop.hpp"
#include "daemon/proposers/builtin_tuner.hpp"
#include "daemon/proposers/knobs.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "tests/daemon/loop/loop_fixtures.hpp"

using namespace ak;
using namespace ak::test;

namespace {

struct CrashHere {};

std::vector<GpuWorker> gpus(Evaluator& ev, int n) {
  std::vector<GpuWorker> out;
  for (int d = 0; d < n; ++d) out.push_back({d, "NVIDIA H200", &ev});
  return out;
}

const ResultRow& row_of(const std::vector<ResultRow>& rows, const std::string& description) {
  for (auto& r : rows)
    if (r.description == description) return r;
  FAIL("no row described '" << description << "'");
  return rows.front();
}

/// A (90 us) finishes only after B (95 us) has, though it was handed out first.
void a_after_b(ScriptedProposer& pr) {
  pr.queue.push_back({"// us=90 after=B\nA\n", "A", 10, 0});
  pr.queue.push_back({"// us=95\nB\n", "B", 10, 0});
}

/// A run on two GPUs of A (finishing after B) and B, "killed" at the nth `point`.
void run_killed(const Config& cfg, ManualClock& clock, const std::string& point, int nth) {
  OrderedEvaluator ev;
  ev.wait_s = 0.5;
  ScriptedProposer pr;
  a_after_b(pr);
  RunLoop loop(cfg, gpus(ev, 2), pr, clock);
  int seen = 0;
  loop.crash_point = [&](const std::string& p) {
    if (p == point && ++seen == nth) throw CrashHere{};
  };
  REQUIRE_THROWS_AS(loop.run(), CrashHere);
}

void check_numbers_once(const std::vector<ResultRow>& rows) {
  std::set<long long> seen;
  for (auto& r : rows) CHECK(seen.insert(r.experiment).second);
}

}  // namespace

TEST_CASE("with two GPUs two experiments run at once and rows are written in order of completion", "[loop][parallel]") {
  TempDir dir;
  OrderedEvaluator ev;
  ev.hold_ms = 200;   // B must still be running when A's thread starts, however late it is scheduled
  ScriptedProposer pr;
  ManualClock clock;
  a_after_b(pr);
  RunLoop loop(loop_config(dir), gpus(ev, 2), pr, clock);
  nlohmann::json state_while_busy;
  loop.crash_point = [&](const std::string& p) {
    if (p == "evaluated" && state_while_busy.is_null())
      state_while_busy = nlohmann::json::parse(read_file_text(loop.directory().state()).value_or("{}"));
  };
  auto out = loop.run();
  REQUIRE(out.ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 3);
  CHECK(ev.most_at_once == 2);
  CHECK(rows[1].description == "B");           // experiment 3 finished first and was recorded first
  CHECK(rows[1].experiment == 3);
  CHECK(rows[2].description == "A");
  CHECK(rows[2].experiment == 2);
  CHECK(rows[1].kept);
  CHECK(rows[2].kept);                          // 90 against the best at its time, B's 95
  CHECK(loop.kernels()[0].best_us == Approx(90));
  check_numbers_once(rows);
  // The starter ran alone: nothing else of this kernel could be proposed before it.
  REQUIRE(state_while_busy["gpus"].size() == 2);
  CHECK(state_while_busy["gpus"][0]["device"] == 0);
  CHECK(state_while_busy["gpus"][0]["model"] == "NVIDIA H200");
  // The ledger is empty once everything in flight was recorded.
  CHECK(nlohmann::json::parse(read_file_text(loop.directory().in_flight()).value_or("x"), nullptr, false).empty());
}

TEST_CASE("state.json says where each GPU's time went, judging or idle and why, adding up to the run", "[loop][parallel][gpu-time]") {
  TempDir dir;
  OrderedEvaluator ev;
  ev.hold_ms = 200;
  ScriptedProposer pr;
  ManualClock clock;
  a_after_b(pr);
  RunLoop loop(loop_config(dir), gpus(ev, 2), pr, clock);
  REQUIRE(loop.run().ok());
  auto state = nlohmann::json::parse(read_file_text(loop.directory().state()).value_or("{}"));
  REQUIRE(state["gpus"].size() == 2);
  auto seconds = [&](int g, const char* what) { return state["gpus"][g]["seconds"].value(what, 0.0); };
  double total[2] = {0, 0};
  for (int g = 0; g < 2; ++g)
    for (auto& [k, v] : state["gpus"][g]["seconds"].items()) total[g] += v.get<double>();
  CHECK(total[0] > 0);
  CHECK(total[0] == Approx(total[1]));   // both from the loop's start to the last write
  // The starter is measured alone on one GPU; the other has no kernel it could take meanwhile.
  CHECK(seconds(0, "starter") + seconds(1, "starter") > 0);
  CHECK(seconds(0, "no_open_kernel") + seconds(1, "no_open_kernel") > 0);
  // A and B ran at once, one on each GPU.
  CHECK(seconds(0, "candidate") > 0);
  CHECK(seconds(1, "candidate") > 0);
  CHECK(seconds(0, "ending") + seconds(1, "ending") > 0);
}

TEST_CASE("status shows what each GPU is doing while experiments are in flight", "[loop][parallel]") {
  TempDir dir;
  OrderedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  a_after_b(pr);
  RunLoop loop(loop_config(dir), gpus(ev, 2), pr, clock);
  std::vector<std::string> doing;
  loop.crash_point = [&](const std::string& p) {
    if (p != "dispatched") return;
    auto j = nlohmann::json::parse(read_file_text(loop.directory().state()).value_or("{}"), nullptr, false);
    if (j.contains("gpus"))
      for (auto& g : j["gpus"]) doing.push_back(g["doing"].get<std::string>());
  };
  REQUIRE(loop.run().ok());
  // state.json is read at each dispatch, before that dispatch is written: when B is dispatched,
  // GPU 0 is judging A.
  CHECK(std::find(doing.begin(), doing.end(), "experiment 2 rmsnorm: A") != doing.end());
  auto final_state = nlohmann::json::parse(read_file_text(loop.directory().state()).value_or("{}"));
  CHECK(final_state["gpus"][0]["doing"] == "idle");
  CHECK(final_state["gpus"][1]["doing"] == "idle");
}

TEST_CASE("a candidate paired with a best that was replaced meanwhile is judged again beside the new best", "[loop][parallel]") {
  TempDir dir;
  OrderedEvaluator ev;
  ev.judge.pair_noise = 0.001;
  ScriptedProposer pr;
  ManualClock clock;
  a_after_b(pr);
  pr.queue.push_back({"// us=97 after=B\nC\n", "C", 10, 0});
  RunLoop loop(loop_config(dir), gpus(ev, 3), pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 4);
  check_numbers_once(rows);
  CHECK(row_of(rows, "B").kept);
  CHECK(row_of(rows, "A").kept);                               // 90 beside B's 95
  CHECK(row_of(rows, "A").paired_best_us == Approx(95));
  CHECK(row_of(rows, "A").paired_ratio == Approx(90.0 / 95));
  CHECK_FALSE(row_of(rows, "C").kept);                         // 0.97 beside the starter, slower beside B
  CHECK(row_of(rows, "C").paired_best_us < 100);
  // A and C were each judged twice: beside the starter, then beside the newer best.
  CHECK(ev.judge.calls == 6);
  // Both first verdicts were stale, and state.json counts them for the scaling measurement.
  auto state = nlohmann::json::parse(read_file_text(loop.directory().state()).value_or("{}"));
  CHECK(state["stale_verdicts"]["judged_again"] == 2);
  CHECK(state["stale_verdicts"]["count"].get<int>() >= 2);
}

TEST_CASE("killed with two experiments in flight, a restart runs both again under their numbers", "[loop][parallel][resume]") {
  TempDir dir;
  ManualClock clock;
  auto cfg = loop_config(dir);
  run_killed(cfg, clock, "dispatched", 3);   // the starter, A, then B handed out
  REQUIRE(open_results(cfg.run_dir() + "/results.tsv")->size() == 1);
  OrderedEvaluator ev;
  ScriptedProposer pr;
  pr.queue.push_back({"// us=80\nD\n", "D", 10, 0});
  RunLoop loop(cfg, gpus(ev, 2), pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 4);
  check_numbers_once(rows);
  CHECK(row_of(rows, "A").experiment == 2);
  CHECK(row_of(rows, "B").experiment == 3);
  CHECK(row_of(rows, "D").experiment == 4);   // new work gets the next number, never one in flight
  CHECK(row_of(rows, "D").kept);
  CHECK(loop.kernels()[0].best_us == Approx(80));
}

TEST_CASE("killed after one of two in flight was recorded, the other is run again and nothing is recorded twice", "[loop][parallel][resume]") {
  TempDir dir;
  ManualClock clock;
  auto cfg = loop_config(dir);
  run_killed(cfg, clock, "recorded", 2);   // B's row is written, A is in flight
  OrderedEvaluator ev;
  ev.wait_s = 0.1;   // A waits for a B that was judged before the kill
  ScriptedProposer pr;
  RunLoop loop(cfg, gpus(ev, 2), pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 3);
  check_numbers_once(rows);
  CHECK(rows[1].description == "B");
  CHECK(rows[2].description == "A");
  CHECK(rows[2].experiment == 2);
  CHECK(rows[2].kept);
  CHECK(ev.judge.calls == 1);   // A alone: B was not judged again
}

TEST_CASE("the builtin tuner gives each GPU a different knob move", "[loop][parallel][tuner]") {
  TempDir dir;
  OrderedEvaluator ev;   // every candidate times like the starter: all are reverted
  ev.hold_ms = 100;      // long enough for the loop to fill all three GPUs, also on a loaded CPU
  BuiltinTuner tuner;
  ManualClock clock;
  RunLoop loop(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 6\n"), gpus(ev, 3), tuner, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() >= 7);
  std::set<std::string> keys;
  for (auto& r : rows) {
    auto src = read_file_text(loop.directory().path(loop.directory().experiment_file(r.experiment, r.tag)));
    REQUIRE(src.ok());
    CHECK(keys.insert(knob_key(read_knobs(*src))).second);   // no configuration measured twice
  }
  CHECK(ev.most_at_once >= 2);
}

TEST_CASE("a slow proposer is asked from the experiments threads and at most as many at once as it allows", "[loop][parallel]") {
  TempDir dir;
  OrderedEvaluator ev;
  ScriptedProposer pr;
  pr.slow = 2;
  pr.hold_ms = 200;   // every question is still open when the next GPU asks
  ManualClock clock;
  pr.queue.push_back({"// us=90\nA\n", "A", 10, 0.01});
  pr.queue.push_back({"// us=95\nB\n", "B", 20, 0.02});
  pr.queue.push_back({"// us=97\nC\n", "C", 30, 0.03});
  RunLoop loop(loop_config(dir), gpus(ev, 3), pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 4);
  check_numbers_once(rows);
  CHECK(pr.most_at_once == 2);   // three GPUs free, two questions at once
  CHECK(row_of(rows, "A").llm_tokens == 10);
  CHECK(row_of(rows, "B").llm_tokens == 20);
  CHECK(row_of(rows, "C").llm_tokens == 30);
  CHECK_THAT(read_file_text(loop.directory().state()).value_or(""), Catch::Contains("\"llm_cost_usd\": 0.06"));
}

TEST_CASE("a stop request with experiments in flight lets them finish and records them", "[loop][parallel]") {
  TempDir dir;
  OrderedEvaluator ev;
  ScriptedProposer pr;
  ManualClock clock;
  for (int i = 0; i < 6; ++i) pr.add(90 - i, "step");
  std::atomic<bool> stop{false};
  RunLoop loop(loop_config(dir), gpus(ev, 2), pr, clock, LoopSignals{&stop, nullptr});
  int dispatched = 0;
  loop.crash_point = [&](const std::string& p) {
    if (p == "dispatched" && ++dispatched == 3) stop = true;
  };
  auto out = loop.run();
  REQUIRE(out.ok());
  CHECK(out->kind == RunOutcome::Stopped);
  CHECK(rows_of(loop).size() == 3);
  CHECK(nlohmann::json::parse(read_file_text(loop.directory().in_flight()).value_or("x"), nullptr, false).empty());
}

TEST_CASE("an experiment in flight on a kernel the config no longer lists is dropped and its number stays unused", "[loop][parallel][resume]") {
  TempDir dir;
  ManualClock clock;
  auto cfg = loop_config(dir);
  REQUIRE(RunDirectory(cfg.run_dir()).create().ok());
  InFlightLedger ledger(cfg.run_dir() + "/in_flight.json");
  REQUIRE(ledger.add({5, "softmax", 0, "tier 1: AK_THREADS 256 -> 128", 0, 0, 1}).ok());
  REQUIRE(write_file_atomic(cfg.run_dir() + "/experiments/0005-softmax.cu", "// us=50\nold\n").ok());
  OrderedEvaluator ev;
  ScriptedProposer pr;
  pr.add(90, "faster");
  RunLoop loop(cfg, gpus(ev, 2), pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].experiment == 6);   // after the dropped number
  CHECK(rows[0].tag == "rmsnorm");
  CHECK(ev.judge.calls == 2);       // the softmax candidate was not run
}

TEST_CASE("with eight GPUs finishing in reverse order every verdict is recorded once, against the best at its time", "[loop][parallel]") {
  TempDir dir;
  OrderedEvaluator ev;
  ev.wait_s = 10;
  ev.hold_ms = 300;   // all eight are running at once, however late their threads are scheduled
  ScriptedProposer pr;
  ManualClock clock;
  // C1 is handed out first and finishes last: each Ci waits for C(i+1). The faster ones finish first.
  for (int i = 1; i <= 8; ++i) {
    const std::string name = "C" + std::to_string(i);
    const std::string after = i < 8 ? " after=C" + std::to_string(i + 1) : "";
    pr.queue.push_back({"// us=" + std::to_string(100 - i) + after + "\n" + name + "\n", name, 10, 0});
  }
  RunLoop loop(loop_config(dir), gpus(ev, 8), pr, clock);
  auto out = loop.run();
  REQUIRE(out.ok());
  auto rows = rows_of(loop);
  REQUIRE(rows.size() == 9);   // the starter, then the eight
  CHECK(ev.most_at_once == 8);
  check_numbers_once(rows);
  for (int i = 8; i >= 1; --i) {   // recorded in the order they finished: C8 first
    const ResultRow& r = rows[size_t(9 - i)];
    CHECK(r.description == "C" + std::to_string(i));
    CHECK(r.experiment == i + 1);
    CHECK(r.kept == (i == 8));     // C8 (92 us) beats the starter; each later one is slower than C8
  }
  CHECK(loop.kernels()[0].best_us == Approx(92));
  // The loop thread's time per decision (here with real commits in a temp dir) is in state.json.
  auto state = nlohmann::json::parse(read_file_text(loop.directory().state()).value_or("{}"));
  REQUIRE(state.contains("decisions"));
  CHECK(state["decisions"]["count"] == 9);
  CHECK(state["decisions"]["median_ms"].get<double>() > 0);
  CHECK(state["decisions"]["max_ms"].get<double>() >= state["decisions"]["median_ms"].get<double>());
  // C7 to C1 were proposed beside the starter and judged after C8 replaced it: seven stale
  // verdicts, none faster than C8, so none judged again.
  CHECK(state["stale_verdicts"]["count"] == 7);
  CHECK(state["stale_verdicts"]["judged_again"] == 0);
  std::printf("loop thread per decision, 8 workers: median %.2f ms, max %.2f ms over %d decisions\n",
              state["decisions"]["median_ms"].get<double>(), state["decisions"]["max_ms"].get<double>(),
              state["decisions"]["count"].get<int>());
}

TEST_CASE("on two GPUs a kernel whose moves fail gets no move past its revert budget, as on one GPU", "[loop][parallel]") {
  TempDir dir;
  OrderedEvaluator ev;
  ev.hold_ms = 20;
  ScriptedProposer pr;
  ManualClock clock;
  for (int i = 1; i <= 6; ++i) pr.add(110 + i, "slower " + std::to_string(i));   // every move reverts
  RunLoop loop(loop_config(dir, "[convergence]\nmax_consecutive_reverts = 3\n"), gpus(ev, 2), pr, clock);
  REQUIRE(loop.run().ok());
  auto rows = rows_of(loop);
  // The starter, then three reverts: whatever order they finish in, a fourth move is never sent
  // while the three in flight or recorded could end the kernel (one more was, before).
  REQUIRE(rows.size() == 4);
  for (size_t i = 1; i < rows.size(); ++i) CHECK_FALSE(rows[i].kept);
  CHECK(ev.most_at_once == 2);
  check_numbers_once(rows);
}
