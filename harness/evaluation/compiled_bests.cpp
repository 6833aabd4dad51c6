#include "harness/evaluation/compiled_bests.hpp"

#include <algorithm>

namespace ak {

Result<const CompileOutput*> CompiledBests::find(const std::string& type, const std::string& arch, const std::string& source,
                                                 const std::function<Result<CompileOutput>()>& compile) {
  // The whole source is the key: a hash that two files shared would time a candidate beside the
  // wrong best.
  std::string key = type + '\n' + arch + '\n' + source;
  ++finds_;
  if (auto it = kept_.find(key); it != kept_.end()) {
    it->second.last_found = finds_;
    return &it->second.output;
  }
  auto compiled = compile();
  if (!compiled) return compiled.error();
  if (kept_.size() >= kMaxKept)
    kept_.erase(std::min_element(kept_.begin(), kept_.end(), [](const auto& a, const auto& b) {
      return a.second.last_found < b.second.last_found;
    }));
  return &kept_.emplace(std::move(key), Kept{std::move(*compiled), finds_}).first->second.output;
}

}  // namespace ak
