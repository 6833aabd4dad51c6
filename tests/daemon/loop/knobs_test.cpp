#include <catch2/catch.hpp>

#include "daemon/loop/builtin_tuner.hpp"
#include "daemon/loop/knobs.hpp"
#include "daemon/loop/variant_moves.hpp"
#include "kernels_cuda/variants.hpp"

#include <set>
#include "kernels_cuda/registry.hpp"

using namespace ak;

namespace {
/// What the tuner sees before the first experiment of rmsnorm: the starter as the best.
ProposalContext rmsnorm_starter_context() {
  ProposalContext ctx;
  ctx.spec = &rmsnorm_spec();
  ctx.best_source = rmsnorm_spec().starter_source();
  return ctx;
}
}  // namespace

TEST_CASE("knob lines are read and rewritten, the rest of the file untouched", "[knobs]") {
  std::string src = "#define AK_THREADS 256   // threads\n#define OTHER 3\n  #define AK_VEC 1\nint x;";
  auto k = read_knobs(src);
  CHECK(k == Knobs{{"AK_THREADS", 256}, {"AK_VEC", 1}});
  std::string out = with_knob(src, "AK_THREADS", 512);
  CHECK(out == "#define AK_THREADS 512   // threads\n#define OTHER 3\n  #define AK_VEC 1\nint x;");
  CHECK(with_knob(src, "AK_MISSING", 4) == src);
  CHECK(knob_key(k) == "AK_THREADS=256 AK_VEC=1");
}

TEST_CASE("the starters expose knobs of the first two tiers", "[knobs]") {
  for (auto* spec : all_specs()) {
    auto k = read_knobs(spec->starter_source());
    int tier1 = 0, tier2 = 0;
    for (auto& [name, v] : k) {
      tier1 += BuiltinTuner::tier(name) == 1;
      tier2 += BuiltinTuner::tier(name) == 2;
    }
    INFO(spec->type);
    CHECK(tier1 >= 1);
    CHECK(tier2 >= 1);
  }
}

TEST_CASE("the tuner changes one knob at a time, block sizing first, and never repeats a configuration", "[tuner]") {
  BuiltinTuner t;
  ProposalContext ctx = rmsnorm_starter_context();
  auto first = t.propose(ctx);
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK((*first)->description == "tier 1: AK_THREADS 256 -> 128");
  auto changed = read_knobs((*first)->source);
  auto base = read_knobs(ctx.best_source);
  int differences = 0;
  for (auto& [n, v] : base) differences += changed[n] != v;
  CHECK(differences == 1);

  // Feed every proposal back as measured, the knob moves as kept so that no structure switch is
  // due: the tuner walks the whole neighbourhood once, then tries the variants, then stops.
  std::set<std::string> seen;
  int structure_moves = 0;
  for (int i = 0; i < 100; ++i) {
    auto p = t.propose(ctx);
    REQUIRE(p.ok());
    if (!p->has_value()) break;
    CHECK(seen.insert(configuration_key((*p)->source)).second);
    const bool switch_move = (*p)->move == MoveKind::Structure;
    structure_moves += switch_move;
    ctx.history.push_back({(*p)->description, (*p)->source, "PASS", 1, !switch_move && i % 3 == 0, "", (*p)->move});
  }
  CHECK(seen.size() - structure_moves == 3 + 4 + 3);   // rows 2,4,8; threads 64..1024 but 256; vec 2,4,8
  CHECK(structure_moves == int(kernel_variants("rmsnorm").size()) - 1);
  CHECK_FALSE(t.propose(ctx)->has_value());
}

TEST_CASE("the tuner tries every knob's nearest value before any knob's second", "[tuner]") {
  BuiltinTuner t;
  ProposalContext ctx;
  ctx.spec = &softmax_spec();
  ctx.best_source = softmax_spec().starter_source();
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) {
    auto p = t.propose(ctx);
    REQUIRE(p.ok());
    REQUIRE(p->has_value());
    order.push_back((*p)->description);
    ctx.history.push_back({(*p)->description, (*p)->source, "PASS", 1, false, "", (*p)->move});
  }
  // The fourth would be AK_THREADS 256 -> 512, but three reverts in a row in one structure make
  // the tuner try the variants first (tests/daemon/loop/variant_moves_test.cpp).
  REQUIRE(order.size() == 4);
  CHECK(std::vector<std::string>(order.begin(), order.begin() + 3) ==
        std::vector<std::string>{"tier 1: AK_THREADS 256 -> 128", "tier 1: AK_ROWS_PER_BLOCK 1 -> 2", "tier 2: AK_VEC 1 -> 2"});
  CHECK(order[3].rfind(kStructureMove, 0) == 0);
}

TEST_CASE("a file without knobs is a proposal error, not a silent stop", "[tuner]") {
  BuiltinTuner t;
  ProposalContext ctx;
  ctx.spec = &softmax_spec();
  ctx.best_source = "__global__ void softmax_kernel() {}";
  auto p = t.propose(ctx);
  REQUIRE_FALSE(p.ok());
  CHECK_THAT(p.error().message, Catch::Contains("no knob lines"));
}

TEST_CASE("tile, warp, stage and capacity knobs move by powers of two, never to a size a kernel cannot tile", "[tuner]") {
  CHECK(BuiltinTuner::candidates("AK_TILE_M", 64) == std::vector<long long>{32, 128, 16, 256});
  CHECK(BuiltinTuner::candidates("AK_WARPS_N", 2) == std::vector<long long>{1, 4, 8});
  CHECK(BuiltinTuner::candidates("AK_BLOCK_KV", 64) == std::vector<long long>{32, 128, 16, 256});
  CHECK(BuiltinTuner::candidates("AK_UNROLL", 4) == std::vector<long long>{2, 8, 1, 16});
  CHECK(BuiltinTuner::candidates("AK_ROW_CAPACITY", 8192) == std::vector<long long>{4096, 16384, 2048, 32768});
}

TEST_CASE("the tuner does not propose a configuration that is being judged on another GPU", "[tuner][parallel]") {
  BuiltinTuner t;
  ProposalContext ctx = rmsnorm_starter_context();
  auto first = t.propose(ctx);
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  ctx.in_flight.push_back({(*first)->description, (*first)->source, "IN_FLIGHT", 0, false, ""});
  auto second = t.propose(ctx);
  REQUIRE(second.ok());
  REQUIRE(second->has_value());
  CHECK((*second)->description != (*first)->description);
  CHECK(knob_key(read_knobs((*second)->source)) != knob_key(read_knobs((*first)->source)));
}
