#include "harness/judging/stages.hpp"

namespace ak {

void record_failure(const StageFailure& f, const std::string& stage, Verdict& v) {
  v.correctness = f.correctness;
  v.message = stage + ": " + f.message;
  v.failed_stage = stage;
  v.failed_shape = shape_str(f.at.shape);
  v.failed_dtype = dtype_name(f.at.dtype);
  v.failed_input = recipe_name(f.at.recipe);
  v.worst_index = f.comparison.worst_index;
  v.worst_got = f.comparison.worst_got;
  v.worst_expected = f.comparison.worst_expected;
  v.context_lost = f.context_lost;
  v.harness_error = v.harness_error || f.harness;
}

}  // namespace ak
