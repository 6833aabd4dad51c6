#include <catch2/catch.hpp>

#include "daemon/proposers/builtin_tuner.hpp"
#include "daemon/proposers/knob_constraints.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"

using namespace ak;

TEST_CASE("a knob configuration that breaks a starter's static_assert is named with its message", "[knobs][constraints]") {
  const std::string mm = find_spec("matmul")->starter_source();
  Knobs k = read_knobs(mm);
  CHECK_FALSE(broken_assert(mm, k));                 // the starter as shipped
  k["AK_TILE_N"] = 16;                               // 16 columns over 2 warps: 8 each, not a 16x16 fragment
  CHECK(broken_assert(mm, k).value_or("") == "tiles are made of 16x16 fragments");
  k = read_knobs(mm);
  k["AK_WARPS_M"] = 8;
  k["AK_WARPS_N"] = 8;                               // 2048 threads (and 8-wide warp tiles)
  CHECK(broken_assert(mm, k).has_value());
  k = read_knobs(mm);
  k["AK_STAGES"] = 0;
  CHECK(broken_assert(mm, k).value_or("") == "at least one stage");

  const std::string rms = find_spec("rmsnorm")->starter_source();
  Knobs r = read_knobs(rms);
  r["AK_THREADS"] = 64;
  r["AK_ROWS_PER_BLOCK"] = 4;                        // 16 threads a row
  CHECK(broken_assert(rms, r).value_or("") == "each row needs whole warps");
  r["AK_ROWS_PER_BLOCK"] = 2;
  CHECK_FALSE(broken_assert(rms, r));
}

TEST_CASE("the constraint reader judges only what it can read and evaluates C's precedence", "[knobs][constraints]") {
  const std::string src =
      "#define AK_A 6\n"
      "constexpr int kB = AK_A * 2 + 1 << 1;          // (6*2+1) << 1 = 26\n"
      "constexpr int kC = kB > 20 ? kB - 20 : 0;\n"
      "static_assert(kC == 6 && !(kB % 2) || 0, \"precedence\");\n"
      "static_assert(sizeof(float) == 8, \"left to the compiler\");\n"
      "static_assert(AK_A % kUnknown == 0, \"unknown name\");\n"
      "static_assert(AK_A / (kC - 6) > 0, \"divides\");\n";
  Knobs k = read_knobs(src);
  auto why = broken_assert(src, k);
  REQUIRE(why.has_value());
  CHECK(*why == "divides (a division by zero)");   // the three before it hold or cannot be read
  k["AK_A"] = 7;                                   // kB = 30, kC = 10: the first assert breaks
  CHECK(broken_assert(src, k).value_or("") == "precedence");
}

TEST_CASE("the tuner never spends an experiment on a configuration that cannot compile", "[tuner][constraints]") {
  BuiltinTuner t;
  ProposalContext ctx;
  ctx.spec = find_spec("matmul");
  ctx.best_source = ctx.spec->starter_source();
  int proposals = 0;
  for (; proposals < 200; ++proposals) {
    auto p = t.propose(ctx);
    REQUIRE(p.ok());
    if (!p->has_value()) break;
    CHECK_FALSE(broken_assert((*p)->source, read_knobs((*p)->source)));
    ctx.history.push_back({(*p)->description, (*p)->source, "PASS", 1, false, ""});
  }
  CHECK(proposals > 5);
}

TEST_CASE("every matmul file of version 2 ships knobs its own static_asserts accept, and a shared-memory overrun is named",
          "[knobs][constraints][matmul]") {
  for (const auto& v : kernel_variants("matmul")) {
    INFO(v.name);
    const Knobs k = read_knobs(*v.source);
    CHECK(k.count("AK_TILE_N"));   // the tuner has something to move
    CHECK_FALSE(broken_assert(*v.source, k));
  }
  // The starter and mma_pipeline size shared memory for fp32: a configuration that fits in fp16
  // but not in fp32 is refused before it compiles.
  const std::string mma = [] {
    for (const auto& v : kernel_variants("matmul"))
      if (v.name == "mma_pipeline") return *v.source;
    return std::string();
  }();
  Knobs k = read_knobs(mma);
  k["AK_TILE_K"] = 64;
  k["AK_STAGES"] = 4;   // 4 stages of 256 rows of 68 floats
  CHECK_THAT(broken_assert(mma, k).value_or(""), Catch::Contains("more shared memory than a block can have"));
}
