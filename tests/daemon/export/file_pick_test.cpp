// The rule by which an exported op picks one of its type's files for a call
// (daemon/export/package/launch/file_pick.h, compiled into every package's launchers).
#include <catch2/catch.hpp>

#include "daemon/export/package/launch/file_pick.h"

using autokernel_launch::pick_file;

namespace {

constexpr bool kBoth[] = {true, true};
// Qwen3's norms as a run tunes them: the decoder's over rows of 2048, the per-head q and k norms
// over rows of 128 (65536 and 16384 rows a step), all fp16 (dtype code 0).
constexpr long long kQwen3[] = {4096, 2048, 65536, 128, 16384, 128};
constexpr int kFp16[] = {0, 0, 0};

int pick(long long rows, long long cols, int dtype = 0) {
  const long long call[] = {rows, cols};
  return pick_file(call, 2, kQwen3, kFp16, kBoth, 3, dtype);
}

}  // namespace

TEST_CASE("a call at a tuned shape takes the file tuned there", "[export][file_pick]") {
  CHECK(pick(4096, 2048) == 0);
  CHECK(pick(65536, 128) == 1);
  CHECK(pick(16384, 128) == 2);
}

TEST_CASE("a call at another shape takes a file of its row length first, then the nearest row count by ratio", "[export][file_pick]") {
  CHECK(pick(8, 2048) == 0);        // far fewer rows, but the decoder norm's row length
  CHECK(pick(8192, 128) == 2);      // 16384 is nearer 8192 than 65536 is, as a ratio
  CHECK(pick(40000, 128) == 1);     // |log2(40000/65536)| < |log2(40000/16384)|
  CHECK(pick(65536, 2048) == 0);    // the row length decides before the row count
  CHECK(pick(4096, 4096) == 0);     // no file of this row length: the nearest in every dimension
  CHECK(pick(65536, 256) == 1);
}

TEST_CASE("between files equally near, the call's dtype, then the file listed first", "[export][file_pick]") {
  const long long tuned[] = {4096, 2048, 4096, 2048};
  const int dtypes[] = {0, 1};
  const long long call[] = {4096, 2048};
  CHECK(pick_file(call, 2, tuned, dtypes, kBoth, 2, 1) == 1);  // bf16: the bf16 file
  CHECK(pick_file(call, 2, tuned, dtypes, kBoth, 2, 0) == 0);
  const int unknown_dtypes[] = {-1, -1};
  CHECK(pick_file(call, 2, tuned, unknown_dtypes, kBoth, 2, 1) == 0);  // nothing tells them apart: the first
}

TEST_CASE("a file of unknown tuned shape ranks after every known one, and a dimension the rule ignores never counts", "[export][file_pick]") {
  const long long tuned[] = {-1, -1, 100, 4096};
  const int dtypes[] = {-1, 0};
  const long long call[] = {4096, 2048};
  CHECK(pick_file(call, 2, tuned, dtypes, kBoth, 2, 0) == 1);
  const long long only_unknown[] = {-1, -1};
  CHECK(pick_file(call, 2, only_unknown, dtypes, kBoth, 1, 0) == 0);
  // rotary's layout code (the op passes 0, the run tuned at 1) is not compared.
  const long long rotary[] = {2, 16, 4, 2048, 128, 1, 2, 32, 8, 2048, 128, 1};
  const int rotary_dtypes[] = {0, 0};
  const bool no_layout[] = {true, true, true, true, true, false};
  const long long rotary_call[] = {2, 16, 4, 2048, 128, 0};
  CHECK(pick_file(rotary_call, 6, rotary, rotary_dtypes, no_layout, 2, 0) == 0);
}

namespace {

// Two matmul files of a decoder (M, N, K, has_bias), fp16 (code 0) and bf16 (code 1).
constexpr long long kGemms[] = {4096, 2048, 2048, 0, 4096, 6144, 2048, 0};
constexpr int kGemmDtypes[] = {0, 1};
constexpr bool kAll4[] = {true, true, true, true};

int pick_gemm(long long m, long long n, long long k, long long bias, int dtype) {
  const long long call[] = {m, n, k, bias};
  return autokernel_launch::pick_exact_file(call, 4, kGemms, kGemmDtypes, kAll4, 2, dtype);
}

}  // namespace

TEST_CASE("a tensor-core file serves exactly the shape and dtype it was tuned at, and no other", "[export][file_pick]") {
  CHECK(pick_gemm(4096, 2048, 2048, 0, 0) == 0);
  CHECK(pick_gemm(4096, 6144, 2048, 0, 1) == 1);
  CHECK(pick_gemm(4096, 2048, 2048, 0, 1) == -1);   // tuned in fp16, measured faster only there
  CHECK(pick_gemm(4095, 2048, 2048, 0, 0) == -1);   // one token fewer: PyTorch's
  CHECK(pick_gemm(4096, 2048, 2048, 1, 0) == -1);   // with a bias: another shape
  CHECK(pick_gemm(4096, 2048, 4096, 0, 0) == -1);
}

TEST_CASE("a tensor-core file of unknown tuned shape, exported alone, serves every call after the exact ones", "[export][file_pick]") {
  const long long tuned[] = {4096, 2048, 2048, 0, -1, -1, -1, -1};
  const int dtypes[] = {0, -1};
  const long long exact[] = {4096, 2048, 2048, 0}, other[] = {7, 9, 11, 1};
  CHECK(autokernel_launch::pick_exact_file(exact, 4, tuned, dtypes, kAll4, 2, 0) == 0);
  CHECK(autokernel_launch::pick_exact_file(other, 4, tuned, dtypes, kAll4, 2, 0) == 1);
  const long long unknown_first[] = {-1, -1, -1, -1, 4096, 2048, 2048, 0};
  const int dtypes_first[] = {-1, 0};
  CHECK(autokernel_launch::pick_exact_file(exact, 4, unknown_first, dtypes_first, kAll4, 2, 0) == 1);
}
