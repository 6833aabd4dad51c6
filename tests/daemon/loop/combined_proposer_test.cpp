#include <catch2/catch.hpp>

#include "daemon/loop/combined_proposer.hpp"
#include "daemon/loop/experiment_ledger.hpp"

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
