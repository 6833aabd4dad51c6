// The driver calls' timer: a table of stand-in functions wrapped, called, and its totals read,
// so the wrapping is tested without a GPU.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "harness/gpu/driver_call_times.hpp"

using namespace ak;

namespace {

int g_allocs = 0;
CUresult slow_alloc(CUdeviceptr* p, size_t bytes) {
  ++g_allocs;
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  *p = CUdeviceptr(bytes);
  return CUDA_SUCCESS;
}
CUresult quick_free(CUdeviceptr) { return CUDA_ERROR_INVALID_VALUE; }

const DriverCallTime* find(const std::vector<DriverCallTime>& times, const std::string& name) {
  for (auto& t : times)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("a timed driver table still answers as the driver does, and counts each call and its time", "[harness][driver_times]") {
  reset_driver_call_times();
  CudaDriver d;
  d.cuMemAlloc = &slow_alloc;
  d.cuMemFree = &quick_free;
  time_driver_calls(d);
  time_driver_calls(d);   // twice: still one timer around each call
  CHECK(d.cuMemAlloc != &slow_alloc);
  CHECK(d.cuMemGetInfo == nullptr);   // an entry the table lacks stays missing
  CUdeviceptr p = 0;
  g_allocs = 0;
  CHECK(d.cuMemAlloc(&p, 4096) == CUDA_SUCCESS);
  CHECK(p == 4096);                                          // arguments and result pass through
  CHECK(d.cuMemAlloc(&p, 8192) == CUDA_SUCCESS);
  CHECK(g_allocs == 2);
  CHECK(d.cuMemFree(p) == CUDA_ERROR_INVALID_VALUE);
  const auto times = driver_call_times();
  REQUIRE(times.size() == 2);
  CHECK(times[0].name == "cuMemAlloc");                     // the largest total first
  const DriverCallTime* alloc = find(times, "cuMemAlloc");
  REQUIRE(alloc);
  CHECK(alloc->calls == 2);
  CHECK(alloc->over_1ms == 2);
  CHECK(alloc->total_ms >= 6);
  CHECK(alloc->max_ms >= 3);
  CHECK(alloc->max_ms <= alloc->total_ms);
  const DriverCallTime* free_call = find(times, "cuMemFree");
  REQUIRE(free_call);
  CHECK(free_call->calls == 1);
  CHECK(free_call->over_1ms == 0);
  reset_driver_call_times();
  CHECK(driver_call_times().empty());
}

TEST_CASE("the driver calls' totals are a tab-separated table, one call a line", "[harness][driver_times]") {
  const std::string tsv = driver_call_times_tsv({{"cuMemAlloc", 738, 1851.5, 36.7, 270}, {"cuMemFree", 738, 1201.25, 28.3, 209}});
  CHECK(tsv == "call\tcalls\ttotal_ms\tmax_ms\tover_1ms\n"
               "cuMemAlloc\t738\t1851.500\t36.700\t270\n"
               "cuMemFree\t738\t1201.250\t28.300\t209\n");
}

TEST_CASE("a worker writes its driver calls' times only where AUTOKERNEL_DRIVER_TIMES names a folder", "[harness][driver_times]") {
  const char* old = std::getenv("AUTOKERNEL_DRIVER_TIMES");
  const std::string saved = old ? old : "";
  unsetenv("AUTOKERNEL_DRIVER_TIMES");
  CHECK(driver_call_times_path(0).empty());
  setenv("AUTOKERNEL_DRIVER_TIMES", "/var/tmp/times", 1);
  CHECK_THAT(driver_call_times_path(3), Catch::StartsWith("/var/tmp/times/driver-times-gpu3-") && Catch::EndsWith(".tsv"));
  if (old) setenv("AUTOKERNEL_DRIVER_TIMES", saved.c_str(), 1);
  else unsetenv("AUTOKERNEL_DRIVER_TIMES");
}

TEST_CASE("a call outside the driver's table, and a phase, are timed into the same table while it is timed", "[harness][driver_times]") {
  reset_driver_call_times();
  CudaDriver d;
  d.cuMemFree = &quick_free;
  time_driver_calls(d);   // from here on the process's calls are timed
  add_call_time("cuptiActivityFlushAll", 2500000);
  add_call_time("cuptiActivityFlushAll", 500000);
  {
    TimedCall phase("timing: buffers");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const auto times = driver_call_times();
  const DriverCallTime* flush = find(times, "cuptiActivityFlushAll");
  REQUIRE(flush);
  CHECK(flush->calls == 2);
  CHECK(flush->total_ms == Approx(3.0));
  CHECK(flush->max_ms == Approx(2.5));
  CHECK(flush->over_1ms == 1);
  const DriverCallTime* phase = find(times, "timing: buffers");
  REQUIRE(phase);
  CHECK(phase->calls == 1);
  CHECK(phase->total_ms >= 2);
  CHECK(times.front().name == "cuptiActivityFlushAll");   // sorted with the driver's own calls
  reset_driver_call_times();
  CHECK(driver_call_times().empty());
}
