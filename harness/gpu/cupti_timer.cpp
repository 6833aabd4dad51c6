#include "harness/gpu/cupti_timer.hpp"

#include "harness/gpu/driver_call_times.hpp"

#include <cupti.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdlib>
#include <functional>
#include <mutex>

namespace ak {
namespace {

struct Record {
  std::string name;
  uint64_t start, end;
};

std::mutex g_mutex;
std::vector<Record> g_records;
std::string g_shortfall;   // last_shortfall()

constexpr size_t kBufferBytes = 8 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
    auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(rec);
    g_records.push_back({k->name ? k->name : "", k->start, k->end});
  }
  std::free(buffer);
}

Status check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return ok();
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return error(std::string("CUPTI: ") + what + " failed: " + (text ? text : "?") +
               " (is another profiler attached? CUPTI allows one subscriber per process)");
}

/// Flushes until `expected` records pass `keep` or a second has gone, disables recording, and
/// takes the records that pass, sorted by start.
Result<std::vector<Record>> drain(const std::function<bool(const Record&)>& keep, size_t expected) {
  auto matching = [&] {
    std::lock_guard<std::mutex> lock(g_mutex);
    return size_t(std::count_if(g_records.begin(), g_records.end(), keep));
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (;;) {
    const CUptiResult flushed =
        timed_call("cuptiActivityFlushAll", [] { return cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); });
    if (auto s = check(flushed, "flushing activity records"); !s) return s.error();
    if (matching() >= expected || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const CUptiResult disabled =
      timed_call("cuptiActivityDisable", [] { return cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); });
  if (auto s = check(disabled, "disabling kernel activity"); !s) return s.error();
  std::vector<Record> mine;
  size_t others = 0, dropped = 0;
  std::string other_name;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto& r : g_records) {
      if (keep(r)) mine.push_back(r);
      else if (others++ == 0) other_name = r.name;
    }
    g_records.clear();
    cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
    g_shortfall = std::to_string(others) + " records of other kernels" + (others ? " (the first: " + other_name + ")" : "") +
                  ", " + std::to_string(dropped) + " dropped by CUPTI";
  }
  std::sort(mine.begin(), mine.end(), [](auto& a, auto& b) { return a.start < b.start; });
  return mine;
}

}  // namespace

Status CuptiKernelTimer::start() {
  static Status registered = check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                                   "registering activity buffers");
  if (!registered) return registered;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_records.clear();
  }
  return check(timed_call("cuptiActivityEnable", [] { return cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); }),
               "enabling kernel activity");
}

Result<std::vector<CuptiKernelTimer::Span>> CuptiKernelTimer::stop_all(size_t expected) {
  auto all = drain([](const Record&) { return true; }, expected);
  if (!all) return all.error();
  std::vector<Span> out;
  for (auto& r : *all) out.push_back({r.start, r.end});
  return out;
}

Result<std::vector<CuptiKernelTimer::Span>> CuptiKernelTimer::stop_spans_if(const std::function<bool(const std::string&)>& mine,
                                                                             size_t expected) {
  auto kept = drain([&](const Record& r) { return mine(r.name); }, expected);
  if (!kept) return kept.error();
  std::vector<Span> out;
  for (auto& r : *kept) out.push_back({r.start, r.end});
  return out;
}

std::string CuptiKernelTimer::last_shortfall() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_shortfall;
}

uint64_t CuptiKernelTimer::now() {
  uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

Result<std::vector<double>> CuptiKernelTimer::stop(const std::vector<std::string>& kernels, size_t expected) {
  return stop_if([&](const std::string& name) { return std::find(kernels.begin(), kernels.end(), name) != kernels.end(); },
                 expected);
}

Result<std::vector<double>> CuptiKernelTimer::stop_if(const std::function<bool(const std::string&)>& mine_by_name,
                                                       size_t expected) {
  auto mine = drain([&](const Record& r) { return mine_by_name(r.name); }, expected);
  if (!mine) return mine.error();
  std::vector<double> us;
  for (auto& r : *mine) us.push_back(double(r.end - r.start) / 1000.0);
  return us;
}

}  // namespace ak
