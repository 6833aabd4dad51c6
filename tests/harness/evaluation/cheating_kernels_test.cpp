// The cheating-kernel suite: candidates written to look fast without being fast, the way an
// optimizer rewarded for speed finds them, each with the verdict it must get, and the honest
// file it was made from passing at its honest speed beside it. docs/kernel-contract.md lists the
// ways to cheat and which check stops each. Every case runs through the real worker on a GPU.
#include <catch2/catch.hpp>

#include <chrono>

#include "tests/harness/evaluation/gpu_judge.hpp"

using namespace ak;
using test::judge;
using test::starter_with;
using test::starter_with_text;

namespace {

const std::string kSoftmaxActive = "const bool active = row < rows;  // no early return: every thread reaches __syncthreads";
const std::string kEntry = "template <typename T>\n__global__";

/// A cheat that computes honestly whenever its outputs are poisoned: it must pass, and timed
/// beside `honest` (the starter, unless given) on the same inputs its skip must buy nothing. What
/// is left is the speed of its own code: the extra branch can move a tile kernel's registers and
/// schedule (the matmul cheat compiles to 72 registers against the starter's 80 and ran 11%
/// faster on an H200, every tile computed and checked), never the 2x of the skipped work.
Verdict passes_at_honest_speed(const KernelSpec& spec, const std::string& cheat, const Shape& shape = {},
                               const std::string& honest = "") {
  Verdict v = judge(spec, cheat, honest.empty() ? spec.starter_source() : honest, shape, 50);
  CHECK(v.correctness == Correctness::Pass);
  REQUIRE(v.paired.pairs > 0);
  CHECK(v.paired.ratio > 0.9);
  std::printf("%s cheat beside the honest file: ratio %.4f +- %.4f over %d pairs, %.2f us vs %.2f us\n",
              spec.type.c_str(), v.paired.ratio, v.paired.noise, v.paired.pairs, v.timing->median_us, v.paired.best_us);
  return v;
}

/// A softmax that counts its launches in `counter` (declared by `declaration`) and stops working
/// once warmed up, after 85 launches: the cheat the stages alone cannot see.
std::string launch_counting_softmax(const std::string& declaration) {
  std::string src = starter_with(softmax_spec(), kEntry, declaration + "\n" + kEntry);
  return starter_with_text(src, "const int group = threadIdx.x / kRowThreads;",
                           "if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(&g_launches, 1u);\n"
                           "  if (*(volatile unsigned*)&g_launches > 85) return;\n"
                           "  const int group = threadIdx.x / kRowThreads;");
}

}  // namespace

TEST_CASE("the honest starter timed beside itself gives a ratio of one within its noise", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  for (const KernelSpec* spec : {&softmax_spec(), &rmsnorm_spec()}) {
    Verdict v = judge(*spec, spec->starter_source(), spec->starter_source(), {}, 100);
    REQUIRE(v.passed());
    CHECK(v.paired.pairs == 100);
    CHECK(std::abs(v.paired.ratio - 1) < 0.02);
    CHECK(v.paired.noise < 0.02);
    CHECK_FALSE(v.paired.clears(0.01));
    CHECK(v.paired.best_us == Approx(v.timing->median_us).epsilon(0.03));
  }
}

/// The matmul cheat's skip, or with `never` its twin whose skip cannot fire (K is a size): the
/// same branch, so the same registers and schedule, and only the skip itself between them.
std::string matmul_tile_skip(bool never) {
  return starter_with(matmul_spec(), "const int warp = threadIdx.x / 32;\n",
                      std::string("if ((blockIdx.x & 1) && m0 < M && n0 < N) {\n"
                                  "    const float held = ak_to_float(y[(long long)m0 * N + n0]);\n"
                                  "    if (held == held") + (never ? " && K < 0" : "") +
                          ") return;  // not NaN: an earlier launch's answer\n"
                          "  }\n  const int warp = threadIdx.x / 32;\n");
}

TEST_CASE("a matmul that skips every other tile when it already holds a number gets no gain", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  // Stale outputs: the buffers are poisoned before every launch, timed ones too, so it always
  // computes. Beside its twin a skip that fired would show as half the time; beside the starter
  // the branch's own codegen shows too.
  const Verdict v = passes_at_honest_speed(matmul_spec(), matmul_tile_skip(false), {}, matmul_tile_skip(true));
  CHECK(v.paired.ratio > 0.95);
}

TEST_CASE("a softmax that skips one row in four when its output already holds a number gets no gain", "[gpu][cheat]") {
  // The loop must not keep it: beside the honest file it must not clear the 1% threshold.
  if (!test::gpu_or_skip()) return;
  const std::string cheat = starter_with(softmax_spec(), kSoftmaxActive,
                                         kSoftmaxActive + "\n  if (active && (row & 3) == 0) {\n"
                                         "    const float held = ak_to_float(y[row * cols]);\n"
                                         "    if (held == held) return;\n  }");
  passes_at_honest_speed(softmax_spec(), cheat);
  CHECK_FALSE(judge(softmax_spec(), cheat, softmax_spec().starter_source(), {}, 100).paired.clears(0.01));
}

TEST_CASE("a softmax that memoizes each row's max and sum in __device__ arrays fails at its first launch, naming the memory", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  std::string src = starter_with(softmax_spec(), kEntry,
                                 "__device__ float g_max[1 << 16], g_sum[1 << 16];\n"
                                 "__device__ unsigned long long g_tag[1 << 16];\n" + kEntry);
  src = starter_with_text(src, "  m = row_reduce<true>(m, group);\n",
                          "  m = row_reduce<true>(m, group);\n"
                          "  const unsigned long long tag = (unsigned long long)xr ^ __float_as_uint(ak_to_float(xr[0])) ^\n"
                          "      ((unsigned long long)__float_as_uint(ak_to_float(xr[cols - 1])) << 32);\n"
                          "  if (active && g_tag[row & 0xffff] == tag) m = g_max[row & 0xffff];\n"
                          "  else if (active && lane == 0) g_tag[row & 0xffff] = tag, g_max[row & 0xffff] = m, g_sum[row & 0xffff] = 0.f;\n");
  Verdict v = judge(softmax_spec(), src);
  // Memory that outlives a launch must be as the launch found it: the first write fails the file.
  CHECK(v.correctness == Correctness::Fail);
  CHECK(v.failed_stage == "smoke");
  CHECK_THAT(v.message, Catch::Contains("module memory changed") && (Catch::Contains("g_tag") || Catch::Contains("g_max")));
}

TEST_CASE("a softmax that cuts corners only at the benchmark shape fails as wrong during timing", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  Verdict v = judge(softmax_spec(), starter_with(softmax_spec(), kSoftmaxActive,
                                                 kSoftmaxActive + "\n  if (rows == 8192 && cols == 8192 && (row & 3) == 3) return;"));
  CHECK(v.correctness == Correctness::Fail);
  CHECK(v.failed_stage == "benchmark");
  CHECK(v.failed_shape == "8192x8192");
  CHECK_THAT(v.message, Catch::Contains("wrong output during timing") && Catch::Contains("never written"));
}

namespace {

/// A flash_attention starter changed where `from` is: it must fail, the failure saying where.
void attention_fails(const std::string& from, const std::string& to, const std::string& what) {
  const KernelSpec& spec = flash_attention_spec();
  Verdict v = judge(spec, starter_with(spec, from, to), "", {2, 16, 4, 2048, 128, 1, 2}, 10);
  INFO(what << ": " << correctness_name(v.correctness) << " " << v.message << " (stage '" << v.failed_stage << "' at "
            << v.failed_shape << " " << v.failed_dtype << ")");
  CHECK(v.correctness == Correctness::Fail);
  CHECK_FALSE(v.failed_stage.empty());
}

const std::string kAttentionHeads = "const long long b = head / Hq, h = head % Hq, hk = h / (Hq / Hkv);";

}  // namespace

TEST_CASE("a flash_attention that ignores the kv-head mapping fails at the grouped-query shapes", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  // h % Hkv agrees with h / (Hq / Hkv) only where Hq == Hkv; every head reading kv head 0 (MQA's
  // answer) agrees only where Hkv == 1. The stages have both kinds of shape and others.
  attention_fails(kAttentionHeads, "const long long b = head / Hq, h = head % Hq, hk = h % Hkv;", "kv head h % Hkv");
  attention_fails(kAttentionHeads, "const long long b = head / Hq, h = head % Hq, hk = 0;", "kv head 0 for every query head");
}

TEST_CASE("a flash_attention that reads its operands as contiguous, or is always causal, fails", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  attention_fails("load_rows<T, AK_BLOCK_KV>(Ks, kh, kv0, S, D, k_stride_seq);", "load_rows<T, AK_BLOCK_KV>(Ks, kh, kv0, S, D, D);",
                  "k rows taken D apart whatever the layout");
  attention_fails(kAttentionHeads, kAttentionHeads + "\n  causal = 1;", "the causal mask applied to every shape");
}

TEST_CASE("a fused_mlp that reuses the hidden activations left in its scratch gets no gain", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  // Scratch stashing: scratch is poisoned before every launch, never zeroed or left alone.
  passes_at_honest_speed(fused_mlp_spec(),
                         starter_with(fused_mlp_spec(), "    const T* b[2] = {w_gate, w_up};\n",
                                      "    if (m0 < M && n0 < I) {\n"
                                      "      const float held = ak_to_float(h[(long long)m0 * I + n0]);\n"
                                      "      if (held == held) {  // the last launch's tile is still there\n"
                                      "        __syncthreads();\n"
                                      "        if (threadIdx.x == 0) atomicAdd(&ready[panel], 1u);\n"
                                      "        return;\n      }\n    }\n"
                                      "    const T* b[2] = {w_gate, w_up};\n"),
                         {1024, 1024, 2816});
}

TEST_CASE("an rmsnorm that keeps a memo in device malloc memory is refused before it runs", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  Verdict v = judge(rmsnorm_spec(), starter_with(rmsnorm_spec(), "  const float inv =",
                                                 "  if (threadIdx.x == 0) { float* memo = (float*)malloc(64); if (memo) { memo[0] = ss; free(memo); } }\n"
                                                 "  const float inv ="));
  CHECK(v.correctness == Correctness::CompileError);
  CHECK_THAT(v.message, Catch::Contains("device heap (malloc)"));
}

TEST_CASE("a kernel that counts its launches in module memory fails at its first launch, zeroed or initialised", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  for (const char* counter : {"__device__ unsigned g_launches;", "__device__ unsigned g_launches = 1;"}) {
    Verdict v = judge(softmax_spec(), launch_counting_softmax(counter));
    CHECK(v.correctness == Correctness::Fail);
    CHECK(v.failed_stage == "smoke");
    CHECK_THAT(v.message, Catch::Contains("module memory changed") && Catch::Contains("g_launches"));
  }
}

TEST_CASE("a kernel that counts its launches in the padding between two variables fails, naming the padding", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  // The padding belongs to no symbol: a guard of named variables alone would never see it.
  std::string src = starter_with(softmax_spec(), kEntry,
                                 "__device__ __align__(256) const unsigned char pad_a = 1;\n"
                                 "__device__ __align__(256) const unsigned char pad_b = 2;\n" + kEntry);
  src = starter_with_text(src, "const int group = threadIdx.x / kRowThreads;",
                          "unsigned* hidden = (unsigned*)(const_cast<unsigned char*>(&pad_a) + 128);\n"
                          "  if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(hidden, 1u + pad_b);\n"
                          "  if (*(volatile unsigned*)hidden > 85) return;\n"
                          "  const int group = threadIdx.x / kRowThreads;");
  Verdict v = judge(softmax_spec(), src);
  CHECK(v.correctness == Correctness::Fail);
  CHECK(v.failed_stage == "smoke");
  CHECK_THAT(v.message, Catch::Contains("padding after pad_a"));
}

TEST_CASE("a kernel that keeps state in a string literal or past its last variable fails", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  // A string literal has no name of its own; the bytes after the last variable belong to no
  // section at all, only to the page the driver put the variables in.
  const std::string in_literal = "char* memo = const_cast<char*>(\"launches:....\");\n"
                                 "  if (blockIdx.x == 0 && threadIdx.x == 0) memo[10]++;\n"
                                 "  const int group = threadIdx.x / kRowThreads;";
  // The last word of the 4 KiB page its variable lies in: past every variable, inside the range.
  const std::string past_the_end = "unsigned* memo = (unsigned*)(((unsigned long long)&pad_a | 4095ull) - 3);\n"
                                   "  if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(memo, 1u);\n"
                                   "  const int group = threadIdx.x / kRowThreads;";
  for (const auto& [where, body] : {std::pair{"in a string literal", in_literal}, std::pair{"past the last variable", past_the_end}}) {
    std::string src = starter_with(softmax_spec(), kEntry, "__device__ const unsigned char pad_a = 1;\n" + kEntry);
    src = starter_with_text(src, "const int group = threadIdx.x / kRowThreads;", body);
    Verdict v = judge(softmax_spec(), src);
    std::printf("state %s: %s: %s\n", where, correctness_name(v.correctness), v.message.c_str());
    // Past the driver's allocation the write would fault (CRASH): never a pass either way.
    CHECK_FALSE(v.passed());
    if (v.correctness == Correctness::Fail) CHECK_THAT(v.message, Catch::Contains("module memory changed"));
  }
}

TEST_CASE("a kernel that counts its launches in the pages after its variable fails, naming the driver's page", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  // The driver packs every module's variables into one shared 2 MiB page, 512 bytes a module: the
  // 4 KiB page after a variable is writable, belongs to no variable of this module, and was not
  // compared, so a counter there survived every launch.
  for (const char* offset : {"4096ull + 64", "(1ull << 20)", "(2ull << 20) - 4096"}) {
    std::string src = starter_with(softmax_spec(), kEntry, "__device__ const unsigned char pad_a = 1;\n" + kEntry);
    src = starter_with_text(src, "const int group = threadIdx.x / kRowThreads;",
                            std::string("unsigned* memo = (unsigned*)((((unsigned long long)&pad_a) & ~4095ull) + ") + offset +
                                ");\n"
                                "  if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(memo, 1u);\n"
                                "  if (*(volatile unsigned*)memo > 85) return;\n"
                                "  const int group = threadIdx.x / kRowThreads;");
    Verdict v = judge(softmax_spec(), src);
    std::printf("a counter at the variable's page + %s: %s: %s\n", offset, correctness_name(v.correctness), v.message.c_str());
    CHECK_FALSE(v.passed());
    if (v.correctness == Correctness::Fail) CHECK_THAT(v.message, Catch::Contains("module memory changed"));
  }
}

TEST_CASE("a counter kept in the slack after an output's last byte never counts: the slack is poisoned before every launch", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  // The last word of the output's allocation, past its last element: before, allocations were
  // the operand's exact size and no one wrote or compared these bytes, so a counter there made a
  // file that stops working after a few launches (at the timed shape, 2^27 bytes, there is no
  // slack and it does not count).
  std::string src = starter_with_text(softmax_spec().starter_source(), "const int group = threadIdx.x / kRowThreads;",
                                      "const unsigned long long end = (unsigned long long)(y + (long long)rows * cols);\n"
                                      "  unsigned* memo = (unsigned*)(((end + (2ull << 20) - 1) & ~((2ull << 20) - 1)) - 4);\n"
                                      "  const bool slack = (end & ((2ull << 20) - 1)) != 0;\n"
                                      "  if (slack && blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(memo, 1u);\n"
                                      "  const unsigned seen = *(volatile unsigned*)memo;  // read once: block 0 may add between two reads\n"
                                      "  if (slack && seen > 5 && seen < 0x7fffffffu) return;\n"
                                      "  const int group = threadIdx.x / kRowThreads;");
  Verdict v = judge(softmax_spec(), src);
  std::printf("a counter in the output's slack: %s: %s\n", correctness_name(v.correctness), v.message.c_str());
  CHECK(v.correctness == Correctness::Pass);  // it never reaches 5: it computed every launch, and was checked doing so
}

TEST_CASE("a kernel that skips work in some moments of the GPU clock never passes", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  // A timing window: it cannot know it is timed, so it guesses from the clock; checked launches
  // and the stages see the guesses that were wrong.
  Verdict v = judge(softmax_spec(), starter_with(softmax_spec(), kSoftmaxActive,
                                                 kSoftmaxActive + "\n  __shared__ unsigned long long s_now;\n"
                                                 "  if (threadIdx.x == 0) asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(s_now));\n"
                                                 "  __syncthreads();\n"
                                                 "  if ((s_now >> 16) & 1) return;  // the whole block, one guess"));
  CHECK(v.correctness == Correctness::Fail);
}

TEST_CASE("a current best that today's rules refuse leaves the candidate timed alone, saying so", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  // A best kept by an older autokernel, with memory of its own: not loaded, not paired.
  const std::string old_best = starter_with(softmax_spec(), kSoftmaxActive,
                                            kSoftmaxActive + "\n  if (row == 0 && threadIdx.x == 0) printf(\"row 0\\n\");");
  Verdict v = judge(softmax_spec(), softmax_spec().starter_source(), old_best);
  CHECK(v.correctness == Correctness::Pass);
  CHECK(v.paired.pairs == 0);
  REQUIRE_FALSE(v.notes.empty());
  CHECK_THAT(v.notes.back(), Catch::Contains("not paired with the current best") && Catch::Contains("vprintf"));
}

TEST_CASE("the current best is judged as the candidate is: a best wrong when timed is named, and nothing is kept on it", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  // A best that cuts corners only at the benchmark shape: before, only the candidate's timed
  // launches were checked, so such a best made any candidate beside it look slow or fast at will.
  const std::string bad_best = starter_with(softmax_spec(), kSoftmaxActive,
                                            kSoftmaxActive + "\n  if (rows == 8192 && cols == 8192 && (row & 3) == 3) return;");
  Verdict v = judge(softmax_spec(), softmax_spec().starter_source(), bad_best, {}, 50);
  CHECK(v.correctness == Correctness::Pass);
  REQUIRE(v.paired.pairs > 0);
  CHECK_THAT(v.paired.best_failure, Catch::Contains("wrong output during timing"));
  CHECK_FALSE(v.paired.clears(0.01));
}

TEST_CASE("every evaluation draws its own seeds, none near the clock", "[gpu][cheat]") {
  if (!test::gpu_or_skip()) return;
  const auto now = [] { return uint64_t(std::chrono::system_clock::now().time_since_epoch().count()); };
  const uint64_t before = now();
  Verdict a = judge(rmsnorm_spec(), rmsnorm_spec().starter_source());
  Verdict b = judge(rmsnorm_spec(), rmsnorm_spec().starter_source());
  const uint64_t after = now();
  CHECK(a.seed != b.seed);
  CHECK_FALSE(a.fixed_seed);
  for (uint64_t s : {a.seed, b.seed}) CHECK((s < before - 3600000000000ull || s > after + 3600000000000ull));
}
