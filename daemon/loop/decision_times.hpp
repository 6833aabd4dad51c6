#pragma once
/// The loop thread's time per decision: a verdict turned into keep or revert, a commit, a row and
/// the ledger updated. Every GPU waits on this serial part, so it bounds how many GPUs one loop can
/// keep busy; it is written to state.json and logged when the run ends.
#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

namespace ak {

class DecisionTimes {
 public:
  void add(double ms) { ms_.push_back(ms); }
  size_t count() const { return ms_.size(); }
  double median_ms() const {
    if (ms_.empty()) return 0;
    std::vector<double> s = ms_;
    std::nth_element(s.begin(), s.begin() + long(s.size() / 2), s.end());
    return s[s.size() / 2];
  }
  double max_ms() const { return ms_.empty() ? 0 : *std::max_element(ms_.begin(), ms_.end()); }
  double total_ms() const {
    double t = 0;
    for (double m : ms_) t += m;
    return t;
  }
  nlohmann::json to_json() const {
    return {{"count", count()}, {"median_ms", median_ms()}, {"max_ms", max_ms()}, {"total_ms", total_ms()}};
  }

 private:
  std::vector<double> ms_;
};

}  // namespace ak
