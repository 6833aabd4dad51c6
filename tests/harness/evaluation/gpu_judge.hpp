#pragma once
// Judging candidates on a real GPU through the real worker, for the [gpu] suites: one worker
// shared by a test binary, so a crash or a hang costs a fresh worker, never the test process.
#include <catch2/catch.hpp>

#include <string>

#include "harness/worker/worker_evaluator.hpp"
#include "kernels_cuda/registry.hpp"
#include "tests/support.hpp"

namespace ak::test {

inline WorkerEvaluator& evaluator() {
  static WorkerEvaluator e([] {
    WorkerEvaluator::Options o;
    o.command = {autokernel_binary(), "worker"};
    o.stage_timeout_s = 20;
    return o;
  }());
  return e;
}

/// One evaluation at the spec's benchmark shape (or `shape`); `best` is timed beside it when given.
inline Verdict judge(const KernelSpec& spec, const std::string& source, const std::string& best = "",
                     const Shape& shape = {}, int repetitions = 30) {
  EvalRequest r;
  r.kernel_type = spec.type;
  r.source = source;
  r.best_source = best;
  r.shape = shape;
  r.time_starter = false;
  r.repetitions = repetitions;
  auto v = evaluator().evaluate(r);
  REQUIRE(v.ok());
  INFO(nlohmann::json(*v).dump(1));
  return *v;
}

/// `text` with one piece replaced; fails the test if the piece is not there.
inline std::string starter_with_text(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

/// The starter with one piece of text replaced; fails the test if the piece is not there.
inline std::string starter_with(const KernelSpec& spec, const std::string& from, const std::string& to) {
  return starter_with_text(spec.starter_source(), from, to);
}

}  // namespace ak::test
