#include "daemon/loop/experiment_job.hpp"

#include "daemon/loop/run_directory.hpp"

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

void run_job(ExperimentJob job, Proposer& proposer, Evaluator& evaluator, FinishedQueue& queue) {
  FinishedJob f;
  if (job.propose_on_thread) {
    auto p = proposer.propose(job.context);
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
  f.job = std::move(job);
  queue.push(std::move(f));
}

}  // namespace ak
