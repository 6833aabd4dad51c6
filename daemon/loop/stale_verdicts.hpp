#pragma once
/// Work that parallel GPUs waste: verdicts on candidates proposed beside a best that another GPU
/// replaced while they ran. Such a candidate was written against an older file and paired with it;
/// the faster ones are judged again beside the new best (more GPU time), the others are reverted.
/// With more GPUs per kernel there are more of them: this is what scaling costs. Counted since the
/// daemon started, written to state.json and logged when the run ends.
#include <nlohmann/json.hpp>

namespace ak {

struct StaleVerdicts {
  long long count = 0;         ///< verdicts paired with a best replaced while they ran
  long long judged_again = 0;  ///< of those, the faster ones run again beside the new best

  nlohmann::json to_json() const { return {{"count", count}, {"judged_again", judged_again}}; }
};

}  // namespace ak
