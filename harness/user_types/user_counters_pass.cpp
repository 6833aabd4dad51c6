#include "harness/user_types/user_counters_pass.hpp"

#include <optional>

namespace ak {
namespace {

class UserOperands final : public CountersPassOperands {
 public:
  UserOperands(UserReference& ref, const Shape& shape, DType d) : ref_(ref), shape_(shape), d_(d) {}

  // The pool is the reference process's, and grows as a shape needs: nothing to allocate here.
  Status allocate() override { return ok(); }
  Result<RunBuffers> draw(int pass) override;
  Status judge(int pass, const std::string& where) override;

 private:
  static Error harness_error(const std::string& what, Error cause) {
    Error e = error("the reference process failed to " + what + " (the harness's problem, not the candidate's): ",
                    std::move(cause));
    e.harness = true;
    return e;
  }

  UserReference& ref_;
  const Shape shape_;
  const DType d_;
  std::optional<PreparedRun> run_;   ///< the pool's views for the pass now prepared
};

Result<RunBuffers> UserOperands::draw(int) {
  run_.reset();
  auto prepared = ref_.prepare(shape_, d_);
  if (!prepared) return harness_error("draw the inputs", prepared.error());
  run_ = std::move(*prepared);
  return run_->view();
}

Status UserOperands::judge(int, const std::string& where) {
  auto verdict = ref_.check();
  if (!verdict) return harness_error("judge the outputs", verdict.error());
  if (!verdict->pass) return error("wrong output during " + where + ": " + verdict->message);
  return ok();
}

}  // namespace

std::unique_ptr<CountersPassOperands> user_counters_operands(UserReference& ref, const Shape& shape, DType d) {
  return std::make_unique<UserOperands>(ref, shape, d);
}

}  // namespace ak
