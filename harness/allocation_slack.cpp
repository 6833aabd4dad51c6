#include "harness/allocation_slack.hpp"

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

std::vector<std::pair<CUdeviceptr, size_t>> AllocationSlack::ranges() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<CUdeviceptr, size_t>> out;
  for (const auto& [at, a] : live_)
    if (a.span > a.used) out.push_back({at + a.used, a.span - a.used});
  return out;
}

size_t AllocationSlack::with_slack() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const auto& entry : live_) n += entry.second.span > entry.second.used;
  return n;
}

}  // namespace ak
