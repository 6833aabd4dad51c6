#pragma once
/// The seam between the loop and the harness. The real one runs candidates in a worker process;
/// tests script one. An Error means no verdict could be had (no GPU, no worker); anything the
/// candidate did, crash and hang included, is a Verdict.
#include "common/result.hpp"
#include "harness/evaluation/evaluate.hpp"
#include "harness/judging/verdict.hpp"

namespace ak {

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual Result<Verdict> evaluate(const EvalRequest& req) = 0;
};

}  // namespace ak
