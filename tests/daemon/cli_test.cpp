#include <catch2/catch.hpp>

#include "tests/support.hpp"

using namespace ak::test;

TEST_CASE("--help and --version exit 0", "[cli]") {
  auto h = run_autokernel("--help");
  CHECK(h.exit_code == 0);
  CHECK_THAT(h.out, Catch::Contains("commands:") && Catch::Contains("bench"));
  auto v = run_autokernel("--version");
  CHECK(v.exit_code == 0);
  CHECK_THAT(v.out, Catch::StartsWith("autokernel "));
}

TEST_CASE("every command answers --help with exit 0", "[cli]") {
  for (const char* c : {"run", "bench", "compile", "kernels", "config", "llm", "propose", "status", "report", "profile", "plan", "worker"}) {
    INFO(c);
    auto r = run_autokernel(std::string(c) + " --help");
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("usage: autokernel " + std::string(c)));
  }
}

TEST_CASE("an unknown command exits 2 and lists the commands", "[cli]") {
  auto r = run_autokernel("optimise");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("unknown command 'optimise'") && Catch::Contains("bench"));
}

TEST_CASE("config check: exit 0 on the example, 2 naming a misspelt key", "[cli][config]") {
  auto good = run_autokernel("config check " AK_SOURCE_DIR "/config/example.toml");
  CHECK(good.exit_code == 0);
  CHECK_THAT(good.out, Catch::Contains(": ok"));
  TempDir d;
  std::string f = d.write("bad.toml", "[run]\nnmae = \"x\"\n[[kernel]]\ntype = \"rmsnorm\"\n");
  auto bad = run_autokernel("config check " + f);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.out, Catch::Contains("bad.toml:2: unknown key 'run.nmae'"));
}

TEST_CASE("compile needs no GPU: the starter compiles, a broken file exits 1 with the log", "[cli][nvrtc]") {
  auto ok = run_autokernel("compile starter --kernel softmax --arch sm_80");
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("softmax_kernel<__half>") && Catch::Contains("registers"));
  TempDir d;
  std::string f = d.write("broken.cu", "extern \"C\" __constant__ int ak_block_threads = 32;\n"
                                       "template <typename T> __global__ void softmax_kernel(const T* x, T* y, int r, int c) { y[0] = undefined_thing; }\n");
  auto bad = run_autokernel("compile " + f + " --kernel softmax");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.out, Catch::Contains("undefined_thing"));
  // A structure of the library by name: matmul's wgmma variant compiles for the H100's sm_90a.
  auto variant = run_autokernel("compile wgmma_pipeline --kernel matmul --arch sm_90a");
  CHECK(variant.exit_code == 0);
  CHECK_THAT(variant.out, Catch::Contains("matmul_kernel<__half>"));
  auto unknown = run_autokernel("compile no_such_thing --kernel matmul");
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.out, Catch::Contains("matmul has no structure of that name (starter, mma_pipeline, tma_pingpong, tma_warp_specialized, wgmma_pipeline)"));
}

TEST_CASE("bad usage of compile and bench exits 2", "[cli]") {
  CHECK(run_autokernel("compile starter").exit_code == 2);                     // no --kernel
  CHECK(run_autokernel("compile starter --kernel gemm").exit_code == 2);       // unknown type
  CHECK(run_autokernel("bench /nonexistent.cu --kernel rmsnorm").exit_code == 2);
  CHECK(run_autokernel("bench starter --kernel rmsnorm --shape 12").exit_code == 2);
  auto missing = run_autokernel("bench x.cu --spec /nonexistent/kb.toml");
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.out, Catch::Contains("/nonexistent/kb.toml"));
  auto neither = run_autokernel("bench x.cu");
  CHECK(neither.exit_code == 2);
  CHECK_THAT(neither.out, Catch::Contains("--kernel TYPE or --spec TYPE.toml is required"));
}

TEST_CASE("run without a GPU exits 2 and says what works without one", "[cli]") {
  if (ak::cuda_driver().ok()) {
    std::printf("SKIPPED: no GPU check on a machine with a driver\n");
    return;
  }
  auto r = run_autokernel("run --config " AK_SOURCE_DIR "/config/quickstart.toml");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("a GPU is needed") && Catch::Contains("config check"));
}

TEST_CASE("kernels lists every built-in type with its ABI, metric, baseline, validation and structures", "[cli]") {
  auto r = run_autokernel("kernels");
  CHECK(r.exit_code == 0);
  for (const char* t : {"rmsnorm", "softmax", "layernorm", "reduce", "rotary_embedding", "cross_entropy", "matmul",
                        "flash_attention", "fused_mlp", "swiglu"}) {
    INFO(t);
    CHECK_THAT(r.out, Catch::Contains(std::string("\n") + t + "\n") || Catch::StartsWith(std::string(t) + "\n"));
  }
  CHECK_THAT(r.out, Catch::Contains("const long long* __restrict__ target"));
  CHECK_THAT(r.out, Catch::Contains("swiglu_kernel(const T* __restrict__ gate, const T* __restrict__ up"));
  CHECK_THAT(r.out, Catch::Contains("cuBLAS (cublasGemmEx"));
  CHECK_THAT(r.out, Catch::Contains("256 sampled output rows per run"));
  CHECK_THAT(r.out, Catch::Contains("TFLOPS (compute-bound)"));
  CHECK_THAT(r.out, Catch::Contains("baseline:   the starter timed on the same GPU"));
  CHECK_THAT(r.out, Catch::Contains("structures: starter, mma_pipeline, tma_pingpong, tma_warp_specialized, wgmma_pipeline\n"));   // matmul
  CHECK_THAT(r.out, Catch::Contains("structures: starter, mma_pipeline, tma_swiglu, wgmma_pipeline\n"));   // fused_mlp
}

TEST_CASE("an API key pasted into api_key_env or api_key_file: config check, llm check and run exit 2 and never print it", "[cli][config][secret]") {
  const std::string key = "sk-ant-api03-Zx9kQ2mB7vR4tY1uI8oP3aS6dF0gH5jK";
  TempDir d;
  for (const char* where : {"api_key_env", "api_key_file"}) {
    const std::string cfg = d.write(std::string(where) + ".toml", "[llm]\nprovider = \"anthropic\"\nmodel = \"m\"\n" + std::string(where) +
                                                                     " = \"" + key + "\"\n[[kernel]]\ntype = \"rmsnorm\"\n");
    for (const std::string command : {"config check " + cfg, "llm check --config " + cfg, "run --config " + cfg}) {
      INFO(command);
      auto r = run_autokernel(command);
      CHECK(r.exit_code == 2);
      CHECK_THAT(r.out, Catch::Contains(std::string("llm.") + where + " holds what looks like an API key"));
      CHECK_THAT(r.out, !Catch::Contains("Zx9kQ2mB"));
    }
  }
}
