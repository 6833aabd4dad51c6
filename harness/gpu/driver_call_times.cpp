#include "harness/gpu/driver_call_times.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

namespace ak {
namespace {

enum Entry {
#define AK_ENTRY(name) kEntry_##name,
  AK_DRIVER_FUNCTIONS(AK_ENTRY)
#undef AK_ENTRY
  kEntries
};

const char* const kNames[] = {
#define AK_NAME(name) #name,
    AK_DRIVER_FUNCTIONS(AK_NAME)
#undef AK_NAME
};

struct Totals {
  std::atomic<uint64_t> calls{0}, ns{0}, max_ns{0}, over_1ms{0};
};
Totals g_totals[kEntries];
void* g_real[kEntries];   ///< the functions the wrappers call
std::atomic<bool> g_timing{false};   ///< a table is timed: add_call_time counts

std::mutex g_named_mutex;
std::map<std::string, Totals> g_named;   ///< add_call_time's, by name

void add(Totals& t, uint64_t ns) {
  t.calls++;
  t.ns += ns;
  if (ns > 1000000) t.over_1ms++;
  for (uint64_t m = t.max_ns; ns > m && !t.max_ns.compare_exchange_weak(m, ns);) {}
}

template <int I, typename F>
struct Timed;
template <int I, typename R, typename... A>
struct Timed<I, R (*)(A...)> {
  static R call(A... a) {
    const auto t0 = std::chrono::steady_clock::now();
    R r = reinterpret_cast<R (*)(A...)>(g_real[I])(a...);
    add(g_totals[I], uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count()));
    return r;
  }
};

}  // namespace

void time_driver_calls(CudaDriver& d) {
  g_timing = true;
#define AK_WRAP(name)                                                                  \
  if (d.name && d.name != &Timed<kEntry_##name, decltype(d.name)>::call) {            \
    g_real[kEntry_##name] = reinterpret_cast<void*>(d.name);                          \
    d.name = &Timed<kEntry_##name, decltype(d.name)>::call;                           \
  }
  AK_DRIVER_FUNCTIONS(AK_WRAP)
#undef AK_WRAP
}

void add_call_time(const std::string& name, uint64_t ns) {
  if (!g_timing) return;
  std::lock_guard<std::mutex> lock(g_named_mutex);
  add(g_named[name], ns);
}

TimedCall::~TimedCall() {
  add_call_time(name_, uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count()));
}

std::vector<DriverCallTime> driver_call_times() {
  std::vector<DriverCallTime> out;
  auto row = [](const std::string& name, const Totals& t) {
    return DriverCallTime{name, t.calls, double(t.ns) / 1e6, double(t.max_ns) / 1e6, t.over_1ms};
  };
  for (int i = 0; i < kEntries; ++i)
    if (g_totals[i].calls > 0) out.push_back(row(kNames[i], g_totals[i]));
  {
    std::lock_guard<std::mutex> lock(g_named_mutex);
    for (auto& [name, t] : g_named) out.push_back(row(name, t));
  }
  std::sort(out.begin(), out.end(), [](const DriverCallTime& a, const DriverCallTime& b) { return a.total_ms > b.total_ms; });
  return out;
}

void reset_driver_call_times() {
  for (Totals& t : g_totals) t.calls = 0, t.ns = 0, t.max_ns = 0, t.over_1ms = 0;
  std::lock_guard<std::mutex> lock(g_named_mutex);
  g_named.clear();
}

std::string driver_call_times_tsv(const std::vector<DriverCallTime>& times) {
  std::string out = "call\tcalls\ttotal_ms\tmax_ms\tover_1ms\n";
  char line[256];
  for (const DriverCallTime& t : times) {
    std::snprintf(line, sizeof line, "%s\t%llu\t%.3f\t%.3f\t%llu\n", t.name.c_str(), (unsigned long long)t.calls, t.total_ms,
                  t.max_ms, (unsigned long long)t.over_1ms);
    out += line;
  }
  return out;
}

std::string driver_call_times_path(int device) {
  const char* dir = std::getenv("AUTOKERNEL_DRIVER_TIMES");
  if (!dir || !*dir) return "";
  return std::string(dir) + "/driver-times-gpu" + std::to_string(device) + "-" + std::to_string(getpid()) + ".tsv";
}

}  // namespace ak
