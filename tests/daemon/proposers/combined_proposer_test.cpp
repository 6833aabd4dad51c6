#include <catch2/catch.hpp>

#include "daemon/proposers/builtin_tuner.hpp"
#include "daemon/proposers/combined_proposer.hpp"
#include "daemon/proposers/experiment_ledger.hpp"
#include "tests/daemon/loop/loop_fixtures.hpp"

using namespace ak;

namespace {

/// A proposer that answers with its own name, or with nothing when `empty`.
class Named : public Proposer {
 public:
  explicit Named(std::string name, bool empty = false) : name_(std::move(name)), empty_(empty) {}
  int asked = 0;
  Result<std::optional<Proposal>> propose(const ProposalContext&) override {
    ++asked;
    if (empty_) return std::optional<Proposal>();
    Proposal p;
    p.description = name_;
    return std::optional<Proposal>(p);
  }
  int concurrency() const override { return 3; }

 private:
  std::string name_;
  bool empty_;
};

PastExperiment row(bool kept, const std::string& correctness = "PASS") {
  PastExperiment e;
  e.kept = kept;
  e.correctness = correctness;
  return e;
}

ProposalContext after(std::vector<PastExperiment> history) {
  ProposalContext ctx;
  ctx.best_source = "#define AK_THREADS 256\n";
  ctx.history = std::move(history);
  return ctx;
}

}  // namespace

TEST_CASE("after a new best the tuner sweeps its knobs for two turns, then the LLM edits", "[proposer][tuner]") {
  Named tuner("tuner"), llm("llm");
  CombinedProposer both(tuner, llm);
  CHECK((*both.propose(after({row(true)})))->description == "tuner");
  CHECK((*both.propose(after({row(true), row(false)})))->description == "tuner");
  CHECK((*both.propose(after({row(true), row(false), row(false)})))->description == "llm");
  CHECK((*both.propose(after({row(true), row(false), row(false), row(true)})))->description == "tuner");   // a new best
  CHECK(both.concurrency() == 3);
}

TEST_CASE("the daemon's own events and candidates in flight count as the turns they are", "[proposer][tuner]") {
  ProposalContext ctx = after({row(true), row(false, "BEST_PASS"), row(false, "HARNESS_ERROR")});
  CHECK(CombinedProposer::tuner_turn(ctx));
  ctx.in_flight = {row(false, "IN_FLIGHT"), row(false, "IN_FLIGHT")};
  CHECK_FALSE(CombinedProposer::tuner_turn(ctx));
}

TEST_CASE("the LLM takes the turn when the tuner has nothing, and writes every first file", "[proposer][tuner]") {
  Named tuner("tuner", true), llm("llm");
  CombinedProposer both(tuner, llm);
  CHECK((*both.propose(after({row(true)})))->description == "llm");
  CHECK(tuner.asked == 1);
  ProposalContext first;
  first.first_file = true;
  Named eager("tuner");
  CombinedProposer fresh(eager, llm);
  CHECK((*fresh.propose(first))->description == "llm");
  CHECK(eager.asked == 0);
}

TEST_CASE("the config picks the proposer: the tuner, the LLM, or both", "[proposer][config]") {
  Named tuner("tuner"), llm("llm");
  CombinedProposer both(tuner, llm);
  LlmConfig c;
  CHECK(&configured_proposer(c, tuner, llm, both) == &tuner);
  c.provider = ProviderKind::OpenAI;
  CHECK(&configured_proposer(c, tuner, llm, both) == &llm);
  c.with_tuner = true;
  CHECK(&configured_proposer(c, tuner, llm, both) == &both);
}

TEST_CASE("in the loop, the tuner sweeps each new best and the LLM edits in between", "[proposer][tuner][loop]") {
  test::TempDir dir;
  test::ScriptedEvaluator ev;
  test::ScriptedProposer llm;
  test::ManualClock clock;
  // The LLM's edit keeps the starter's knobs, so the tuner has a file to sweep after it is kept.
  llm.queue.push_back({"// us=90\n" + rmsnorm_spec().starter_source(), "the LLM's edit", 10, 0});
  BuiltinTuner tuner;
  CombinedProposer both(tuner, llm);
  RunLoop loop(test::loop_config(dir, "max_experiments = 6\n"), ev, both, clock);
  REQUIRE(loop.run().ok());
  auto rows = test::rows_of(loop);
  for (auto& r : rows) UNSCOPED_INFO(r.experiment << " " << r.description << " " << r.correctness << " " << r.kept);
  REQUIRE(rows.size() == 6);
  auto tuners = [](const ResultRow& r) {
    return r.description.rfind("tier ", 0) == 0 || r.move == MoveKind::Structure;
  };
  // 1 the baseline; 2, 3 the tuner's moves from it; 4 the LLM's edit, kept; 5, 6 the tuner's
  // moves from that new best.
  CHECK(tuners(rows[1]));
  CHECK(tuners(rows[2]));
  CHECK(rows[3].description == "the LLM's edit");
  CHECK(rows[3].kept);
  CHECK(tuners(rows[4]));
  CHECK(tuners(rows[5]));
  CHECK(llm.seen.size() == 1);
}
