#include "harness/gpu/allocation_slack.hpp"

#include <iterator>

namespace ak {

size_t whole_pages(size_t bytes, size_t granularity) {
  if (granularity == 0) return bytes;
  const size_t pages = bytes == 0 ? 1 : (bytes + granularity - 1) / granularity;
  return pages * granularity;
}

void AllocationSlack::add(CUdeviceptr at, size_t used, size_t span) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_[at] = {used, span};
}

void AllocationSlack::remove(CUdeviceptr at) {
  std::lock_guard<std::mutex> lock(mutex_);
  live_.erase(at);
}

CUdeviceptr AllocationSlack::take_kept(size_t span) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The most recently kept first: the one a repeated case freed last.
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it)
    if (it->span == span) {
      const CUdeviceptr at = it->at;
      kept_bytes_ -= span;
      kept_.erase(std::next(it).base());
      return at;
    }
  return 0;
}

std::vector<CUdeviceptr> AllocationSlack::keep(CUdeviceptr at, size_t span) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (span > kKeptSpanBytes) return {at};
  std::vector<CUdeviceptr> out;
  kept_.push_back({at, span});
  kept_bytes_ += span;
  while (kept_bytes_ > kKeptBytes) {
    out.push_back(kept_.front().at);
    kept_bytes_ -= kept_.front().span;
    kept_.pop_front();
  }
  return out;
}

std::vector<CUdeviceptr> AllocationSlack::drain_kept() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CUdeviceptr> out;
  for (const Kept& k : kept_) out.push_back(k.at);
  kept_.clear();
  kept_bytes_ = 0;
  return out;
}

std::vector<std::pair<CUdeviceptr, size_t>> AllocationSlack::ranges() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<CUdeviceptr, size_t>> out;
  for (const auto& [at, a] : live_)
    if (a.span > a.used) out.push_back({at + a.used, a.span - a.used});
  // A kept allocation is mapped and no one's: all of it, or it would hold a byte for a kernel that
  // finds it by address.
  for (const Kept& k : kept_) out.push_back({k.at, k.span});
  return out;
}

size_t AllocationSlack::with_slack() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const auto& entry : live_) n += entry.second.span > entry.second.used;
  return n;
}

}  // namespace ak
