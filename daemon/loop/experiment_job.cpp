#include "daemon/loop/experiment_job.hpp"

#include "common/atomic_write.hpp"

namespace ak {

void FinishedQueue::push(FinishedJob f) {
  {
    std::lock_guard<std::mutex> l(mu_);
    q_.push_back(std::move(f));
  }
  cv_.notify_one();
}

FinishedJob FinishedQueue::pop() {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return !q_.empty(); });
  FinishedJob f = std::move(q_.front());
  q_.pop_front();
  return f;
}

namespace {

std::string what_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

Result<std::optional<Proposal>> propose_guarded(Proposer& proposer, const ProposalContext& ctx) {
  try {
    return proposer.propose(ctx);
  } catch (...) {
    return error("the proposer failed: " + what_of(std::current_exception()));
  }
}

void propose_and_judge(ExperimentJob& job, Proposer& proposer, Evaluator& evaluator, FinishedQueue& queue, FinishedJob& f) {
  if (job.propose_on_thread) {
    auto p = propose_guarded(proposer, job.context);
    if (!p) {
      f.no_proposal = p.error().message;
    } else if (!*p) {
      f.nothing_to_propose = true;
    } else {
      job.proposal = **p;
      job.request.source = job.proposal.source;
      FinishedJob proposed;
      proposed.job = job;
      proposed.proposed_only = true;
      queue.push(std::move(proposed));
      if (auto s = write_file_atomic(job.candidate_path, job.proposal.source); !s) f.eval_failure = s.error().message;
    }
  }
  if (!f.no_proposal && !f.nothing_to_propose && !f.eval_failure) {
    auto v = evaluator.evaluate(job.request);
    if (v) f.verdict = std::move(*v);
    else f.eval_failure = v.error().message;
  }
}

}  // namespace

void run_job(ExperimentJob job, Proposer& proposer, Evaluator& evaluator, FinishedQueue& queue, Clock& clock) {
  FinishedJob f;
  // Nothing thrown here may end the daemon: it comes back as this experiment's error row.
  try {
    propose_and_judge(job, proposer, evaluator, queue, f);
  } catch (...) {
    f.verdict.reset();
    f.eval_failure.reset();
    f.thrown = what_of(std::current_exception());
  }
  f.job = std::move(job);
  f.finished_s = clock.now_s();
  queue.push(std::move(f));
}

}  // namespace ak
