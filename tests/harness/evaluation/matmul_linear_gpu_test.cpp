// matmul version 2 (y = x W^T + bias, as nn.Linear) on a GPU, through the real worker: the starter
// and the variants at the benchmark shape and at a Qwen3-like decoder's Linear shapes, the
// ping-pong variant with stream-K over its last wave, and fp32 at KernelBench's tolerance. Each
// failure says which file, shape and dtype, and the verdict's own words.
#include <catch2/catch.hpp>

#include <sstream>

#include "kernels_cuda/variants.hpp"
#include "tests/harness/evaluation/gpu_judge.hpp"

using namespace ak;

namespace {

const std::string& matmul_file(const std::string& name) {
  static const auto variants = kernel_variants("matmul");
  for (const auto& v : variants)
    if (v.name == name) return *v.source;
  FAIL("no matmul variant named " << name);
  throw;   // unreachable: FAIL ends the test
}

Verdict judge_source(const std::string& source, const Shape& shape, const std::string& dtype) {
  EvalRequest r;
  r.kernel_type = "matmul";
  r.source = source;
  r.shape = shape;
  r.dtype = dtype;
  r.time_starter = false;
  r.repetitions = 30;
  auto v = test::evaluator().evaluate(r);
  REQUIRE(v.ok());
  return *v;
}

Verdict judge_at(const std::string& name, const Shape& shape, const std::string& dtype) {
  return judge_source(matmul_file(name), shape, dtype);
}

/// One line that says what was judged and what came of it.
std::string summary(const std::string& name, const Shape& shape, const std::string& dtype, const Verdict& v) {
  std::ostringstream s;
  s << "matmul " << name << " at " << shape_str(shape) << " " << dtype << ": " << correctness_name(v.correctness);
  if (!v.passed())
    s << " at stage '" << v.failed_stage << "', shape " << v.failed_shape << " " << v.failed_dtype
      << (v.failed_input.empty() ? "" : ", input " + v.failed_input) << " (worst element " << v.worst_index << ": got "
      << v.worst_got << ", expected " << v.worst_expected << "): " << v.message
      << (v.compile_log.empty() ? "" : "\ncompile log:\n" + v.compile_log);
  if (v.timing) s << "; " << v.timing->median_us << " us, " << v.throughput << " " << v.throughput_unit;
  if (v.cublas_us > 0) s << "; cuBLAS " << v.cublas_us << " us";
  return s.str();
}

void require_pass(const std::string& name, const Shape& shape, const std::string& dtype, const std::string& source = "") {
  Verdict v = source.empty() ? judge_at(name, shape, dtype) : judge_source(source, shape, dtype);
  const std::string what = summary(name, shape, dtype, v);
  std::printf("%s\n", what.c_str());
  INFO(what);
  CHECK(v.passed());
  CHECK(v.timing.has_value());
}

}  // namespace

TEST_CASE("the version 2 starter and every variant pass every stage and time at 4096^3 in fp16 and bf16", "[gpu][matmul]") {
  if (!test::gpu_or_skip()) return;
  // Every evaluation runs the stages in all three dtypes; the timed launches (checked too) are in
  // the dtype named: both for the fast 16-bit files, one for the others.
  for (const char* name : {"wgmma_pipeline", "tma_warp_specialized", "tma_pingpong"})
    for (const char* dtype : {"fp16", "bf16"}) require_pass(name, {4096, 4096, 4096, 0}, dtype);
  require_pass("starter", {4096, 4096, 4096, 0}, "fp16");
  require_pass("mma_pipeline", {4096, 4096, 4096, 0}, "bf16");
}

TEST_CASE("the ping-pong variant with stream-K over its last wave passes every stage, with a bias and without", "[gpu][matmul]") {
  if (!test::gpu_or_skip()) return;
  // Stream-K runs where a partial last wave follows a full one and the workspace holds two tiles
  // a block: at 4096^3 (1024 tiles of 128 x 128) and at a gate/up projection's shape, not at the
  // stages' small shapes, which run whole tiles through the same file.
  std::string stream_k = matmul_file("tma_pingpong");
  const std::string off = "#define AK_STREAM_K 0", on = "#define AK_STREAM_K 1";
  const size_t at = stream_k.find(off);
  REQUIRE(at != std::string::npos);
  stream_k.replace(at, off.size(), on);
  require_pass("tma_pingpong AK_STREAM_K=1", {4096, 4096, 4096, 0}, "fp16", stream_k);
  require_pass("tma_pingpong AK_STREAM_K=1", {4096, 6144, 2048, 1}, "bf16", stream_k);
}

TEST_CASE("the wgmma variants pass at a Qwen3-like decoder's Linear shapes, with a bias and without", "[gpu][matmul]") {
  if (!test::gpu_or_skip()) return;
  // 4096 tokens through Linears of 2048 inputs: o_proj-like (2048), k/v (1024), gate/up (6144).
  for (const char* name : {"wgmma_pipeline", "tma_warp_specialized", "tma_pingpong"})
    for (int64_t n : {2048, 1024, 6144})
      for (int64_t bias : {0, 1}) require_pass(name, {4096, n, 2048, bias}, bias ? "bf16" : "fp16");
}

TEST_CASE("fp32 passes at 1e-4 in every file, summed on the CUDA cores in the reference's order", "[gpu][matmul][fp32]") {
  if (!test::gpu_or_skip()) return;
  // Every stage (the one-huge-per-row inputs among them) in fp32, timed at a Linear's shape with a
  // bias; far from cuBLAS's fp32 GEMM, which the printed line shows beside it.
  for (const char* name : {"starter", "mma_pipeline", "wgmma_pipeline", "tma_warp_specialized", "tma_pingpong"})
    require_pass(name, {1024, 1024, 1024, 1}, "fp32");
}
