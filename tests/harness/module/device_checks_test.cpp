// The harness's own GPU kernels that clear what a launch could find on the chip.
#include <catch2/catch.hpp>

#include <cstdio>

#include "harness/module/device_checks.hpp"
#include "harness/module/harness_module.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

// One kernel leaves a mark in its shared memory; the next, on the same SMs, counts the blocks
// that find it there uninitialised: the channel a file would use to count its launches.
const char* kMarkAndLook = R"(
extern "C" __global__ void mark(int v, int* sink) {
  extern __shared__ int s[];
  volatile int* vs = s;  // stores no one reads are otherwise dropped by the compiler
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) vs[i] = v;
  __syncthreads();
  if (vs[(threadIdx.x * 7) & 1023] == -5) sink[0] = 1;  // a read of the marks, so that they are made
}
extern "C" __global__ void look(int v, unsigned* hits) {
  extern __shared__ int s[];
  if (threadIdx.x == 0 && ((volatile int*)s)[5] == v) atomicAdd(hits, 1u);
}
)";

unsigned blocks_that_find_the_mark(GpuContext& gpu, const HarnessModule& m, const DeviceChecks* poison) {
  const CudaDriver& d = gpu.driver();
  auto hits = gpu.alloc(sizeof(unsigned));
  REQUIRE(hits.ok());
  REQUIRE(d.cuMemsetD8(hits->ptr(), 0, sizeof(unsigned)) == CUDA_SUCCESS);
  int v = 12345;
  CUdeviceptr h = hits->ptr();
  void* mark_params[] = {&v, &h};
  void* look_params[] = {&v, &h};
  const unsigned blocks = unsigned(gpu.info().sm_count * 8);
  REQUIRE(d.cuLaunchKernel(m.functions[0], blocks, 1, 1, 256, 1, 1, 4096, nullptr, mark_params, nullptr) == CUDA_SUCCESS);
  // What the harness runs between launches anyway: memsets (the L2 flush, the poison of outputs).
  auto flush = gpu.alloc(size_t(64) << 20);
  REQUIRE(flush.ok());
  REQUIRE(d.cuMemsetD8(flush->ptr(), 0, flush->bytes()) == CUDA_SUCCESS);
  if (poison) REQUIRE(poison->poison_before_launch(nullptr).ok());
  REQUIRE(d.cuLaunchKernel(m.functions[1], blocks, 1, 1, 256, 1, 1, 4096, nullptr, look_params, nullptr) == CUDA_SUCCESS);
  unsigned found = 0;
  REQUIRE(gpu.download(&found, *hits, sizeof found).ok());
  std::printf("blocks that found the shared-memory mark of the kernel before %s: %u of %u\n",
              poison ? "after the poison" : "with nothing but a memset between", found, blocks);
  return found;
}

}  // namespace

TEST_CASE("shared memory outlives a launch, and the poison before each launch leaves no mark on any SM", "[gpu][slack]") {
  if (!test::gpu_or_skip()) return;
  auto gpu = GpuContext::open(0);
  REQUIRE(gpu.ok());
  auto checks = DeviceChecks::open(**gpu);
  REQUIRE(checks.ok());
  auto m = load_harness_module(**gpu, kMarkAndLook, "mark_and_look.cu", {"mark", "look"});
  REQUIRE(m.ok());
  // Without the poison the mark is found: the test can fail, and shows what the poison is for.
  CHECK(blocks_that_find_the_mark(**gpu, *m, nullptr) > 0);
  CHECK(blocks_that_find_the_mark(**gpu, *m, checks->get()) == 0);
}
