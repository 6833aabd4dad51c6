#include "harness/evaluation/compiled_bests.hpp"

#include <algorithm>

namespace ak {

Result<const CompileOutput*> CompiledBests::find(const std::string& type, const std::string& arch, const std::string& source,
                                                 const std::function<Result<CompileOutput>()>& compile) {
  // The whole source is the key: a hash that two files shared would time a candidate beside the
  // wrong best.
  std::string key = type + '\n' + arch + '\n' + source;
  if (auto it = kept_.find(key); it != kept_.end()) {
    order_.erase(std::find(order_.begin(), order_.end(), key));
    order_.push_back(key);
    return &it->second;
  }
  auto compiled = compile();
  if (!compiled) return compiled.error();
  while (kept_.size() >= kMaxKept) {
    kept_.erase(order_.front());
    order_.pop_front();
  }
  order_.push_back(key);
  return &kept_.emplace(std::move(key), std::move(*compiled)).first->second;
}

}  // namespace ak
