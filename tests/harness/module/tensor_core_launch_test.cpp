// Tensor maps, clusters and persistent grids on a real GPU: what a kernel file receives.
#include <catch2/catch.hpp>

#include <cstring>

#include "harness/gpu/gpu_context.hpp"
#include "harness/gpu/host_dtype.hpp"
#include "harness/module/kernel_launch.hpp"
#include "harness/module/run_buffers.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"
#include "tests/harness/evaluation/gpu_judge.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

const char* kMapsPrelude = R"(
#include <cuda_bf16.h>
#include <cuda_fp16.h>
struct alignas(64) ak_tensor_map { unsigned long long opaque[16]; };
struct ak_tensor_map_args { ak_tensor_map map[8]; unsigned int built; };
extern "C" __constant__ int ak_block_threads = 32;
extern "C" __constant__ int ak_tile_m = 16;
extern "C" __constant__ int ak_tile_n = 16;
)";

// Writes the built bits to c[0] and, when a's map is built, a 2 x 8 box of a from row 1 to c[1..16].
const char* kBoxCopy = R"(
extern "C" __constant__ int ak_tensor_maps[2][5] = {{0, 8, 2, 0, 0}, {1, 8, 2, 0, 0}};
template <typename T>
__global__ void matmul_kernel(const T* a, const T* b, T* c, int M, int N, int K, const __grid_constant__ ak_tensor_map_args maps) {
  __shared__ alignas(128) T box[16];
  __shared__ alignas(8) unsigned long long bar;
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  c[0] = T(float(maps.built));
  if (!(maps.built & 1)) return;
  const unsigned b_addr = (unsigned)__cvta_generic_to_shared(&bar), s_addr = (unsigned)__cvta_generic_to_shared(box);
  asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(b_addr));
  asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;" ::: "memory");
  asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(b_addr), "r"(int(sizeof(box))));
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               ::"r"(s_addr), "l"(&maps.map[0]), "r"(0), "r"(1), "r"(b_addr) : "memory");
  unsigned done = 0;
  while (!done)
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(b_addr) : "memory");
  for (int i = 0; i < 16; ++i) c[1 + i] = box[i];
}
)";

// Writes the grid's size and the cluster's to c[0] and c[1].
const char* kClusterShape = R"(
extern "C" __constant__ int ak_cluster_blocks = 2;
extern "C" __constant__ int ak_persistent = 1;
template <typename T>
__global__ void matmul_kernel(const T* a, const T* b, T* c, int M, int N, int K) {
  unsigned n = 0;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    c[0] = T(float(gridDim.x));
    c[1] = T(float(n));
  }
}
)";

Result<LaunchableKernel> load(GpuContext& gpu, const std::string& body) {
  const KernelSpec& spec = matmul_v1_spec();   // the kernels above are written for version 1 (a, b, c)
  CompileRequest req{std::string(kMapsPrelude) + body, "contract_test.cu", {}, gpu.info().arch};
  for (DType d : spec.dtypes) req.name_expressions.push_back(entry_expression(spec, d));
  auto compiled = nvrtc_compile(req);
  if (!compiled) return compiled.error();
  if (!compiled->ok) return error("compile: " + compiled->log);
  return LaunchableKernel::candidate(gpu, spec, *compiled);
}

/// Launches k once at `shape` in fp16 and returns the first n elements of c, as raw fp16 bits.
std::vector<uint16_t> run(GpuContext& gpu, const LaunchableKernel& k, const Shape& shape, size_t n, RunSet& set) {
  auto s = make_run_set(gpu, matmul_v1_spec(), shape, DType::F16, Recipe::Normal, 5);
  REQUIRE(s.ok());
  set = std::move(*s);
  REQUIRE(k.launch(matmul_v1_spec(), DType::F16, shape, set.view()) == CUDA_SUCCESS);
  REQUIRE(gpu.driver().cuCtxSynchronize() == CUDA_SUCCESS);
  std::vector<uint16_t> c(set.outputs[0].bytes() / 2);
  REQUIRE(gpu.download(c.data(), set.outputs[0], set.outputs[0].bytes()).ok());
  c.resize(n);
  return c;
}

/// The fp16 bits of f, as the kernel's T(float) writes them.
uint16_t half_of(float f) {
  uint16_t h = 0;
  store_from_float(&h, DType::F16, 0, f);
  return h;
}

}  // namespace

TEST_CASE("a declared tensor map covers its operand, and is built only where TMA can map the call", "[gpu][tensor_maps]") {
  if (!test::gpu_or_skip()) return;
  auto gpu = GpuContext::open(0);
  REQUIRE(gpu.ok());
  auto k = load(**gpu, kBoxCopy);
  INFO((k.ok() ? "" : k.error().message));
  REQUIRE(k.ok());
  RunSet set;
  const Shape shape{64, 64, 64};
  auto c = run(**gpu, *k, shape, 17, set);
  CHECK(c[0] == half_of(3));   // maps of a and b both built
  const auto& a = set.host_inputs[0];
  for (int i = 0; i < 16; ++i) {
    uint16_t want = 0;
    std::memcpy(&want, a.data() + (size_t(1 + i / 8) * 64 + i % 8) * 2, 2);
    CHECK(c[size_t(1 + i)] == want);
  }
  // 7 fp16 elements a row: 14 bytes, not a multiple of 16. The file must take its own path.
  c = run(**gpu, *k, {3, 5, 7}, 1, set);
  CHECK(c[0] == 0);
  // a's rows of 8 elements map, b's rows of 5 do not: only bit 0.
  c = run(**gpu, *k, {4, 5, 8}, 1, set);
  CHECK(c[0] == half_of(1));
}

TEST_CASE("an entry point that declares maps but does not take them is refused at load", "[gpu][tensor_maps]") {
  if (!test::gpu_or_skip()) return;
  auto gpu = GpuContext::open(0);
  REQUIRE(gpu.ok());
  // The maps are declared, but the entry point is the plain ABI.
  const std::string body = R"(
extern "C" __constant__ int ak_tensor_maps[1][5] = {{0, 8, 2, 0, 0}};
template <typename T>
__global__ void matmul_kernel(const T* a, const T* b, T* c, int M, int N, int K) {}
)";
  auto k = load(**gpu, body);
  REQUIRE_FALSE(k.ok());
  CHECK_THAT(k.error().message, Catch::Contains("takes 6 parameters; the harness passes 7"));
}

TEST_CASE("a clustered persistent kernel gets whole clusters and no more blocks than the GPU holds", "[gpu][grid_launch]") {
  if (!test::gpu_or_skip()) return;
  auto gpu = GpuContext::open(0);
  REQUIRE(gpu.ok());
  if ((*gpu)->info().cc_major < 9) {
    std::printf("SKIPPED: clusters need compute capability 9.0\n");
    return;
  }
  auto k = load(**gpu, kClusterShape);
  INFO((k.ok() ? "" : k.error().message));
  REQUIRE(k.ok());
  CHECK(k->grid_launch().cluster_blocks == 2);
  CHECK(k->grid_launch().persistent);
  const int64_t resident = k->grid_launch().resident_blocks.at(DType::F16);
  CHECK(resident >= 2);
  CHECK(resident <= int64_t(32) * (*gpu)->info().sm_count);
  RunSet set;
  // Little work: a grid of the work, rounded to whole clusters (3 x 3 tiles of 16 -> 10 blocks).
  auto c = run(**gpu, *k, {48, 48, 16}, 2, set);
  CHECK(c[0] == half_of(10));
  CHECK(c[1] == half_of(2));
  // Much work: the blocks the GPU holds at once, in whole clusters.
  c = run(**gpu, *k, {2048, 2048, 16}, 2, set);
  CHECK(c[0] == half_of(float(resident / 2 * 2)));
  CHECK(c[1] == half_of(2));
}

TEST_CASE("a file with tensor maps is timed beside a best without them, both from CUPTI's records", "[gpu][tensor_maps]") {
  if (!test::gpu_or_skip()) return;
  const std::string* tma = nullptr;
  const std::string* plain = nullptr;
  for (const auto& v : kernel_variants("matmul")) {
    if (v.name == "tma_warp_specialized") tma = v.source;
    if (v.name == "wgmma_pipeline") plain = v.source;
  }
  REQUIRE(tma);
  REQUIRE(plain);
  // The extra parameter gives the two entry points different mangled names: the pairing must
  // still take each launch's record, not fall back to events or refuse the pair.
  Verdict v = test::judge(matmul_spec(), *tma, *plain, {2048, 2048, 2048, 0});
  CHECK(v.passed());
  REQUIRE(v.timing.has_value());
  CHECK(v.timing->source == "CUPTI");
  CHECK(v.paired.pairs > 0);
  CHECK(v.paired.ratio > 0);
  CHECK(v.paired.ratio < 0.8);   // TMA and wgmma at 650+ TFLOPS against the cp.async core's 400
}
