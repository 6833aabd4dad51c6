#include <catch2/catch.hpp>

#include "daemon/proposers/builtin_tuner.hpp"
#include "daemon/proposers/knobs.hpp"
#include "daemon/proposers/variant_moves.hpp"
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
  // the tuner try the variants first (tests/daemon/proposers/variant_moves_test.cpp).
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

namespace {

/// The context of a kernel whose best is `source`, judged once (its standing baseline) with
/// these counters and registers.
ProposalContext best_read_as(const KernelSpec& spec, const std::string& source, const HardwareCounters& c, int registers,
                             int spill_bytes = 0) {
  ProposalContext ctx;
  ctx.spec = &spec;
  ctx.best_source = source;
  PastExperiment base{"baseline", source, "PASS", 100, true, "", MoveKind::Baseline, 1};
  base.standing = true;
  base.registers = registers;
  base.spill_bytes = spill_bytes;
  base.counters = c;
  ctx.history.push_back(base);
  return ctx;
}

HardwareCounters read_as(double dram, double sm, std::vector<StallShare> stalls = {}) {
  HardwareCounters c;
  c.passes = 5;
  c.dram_pct = dram, c.sm_pct = sm, c.tensor_pct = 0, c.bank_conflict_ratio = 0;
  c.stalls = std::move(stalls);
  return c;
}

const std::string& variant_file(const std::string& type, const std::string& name) {
  for (const auto& v : kernel_variants(type))
    if (v.name == name) return *v.source;
  FAIL("no variant " << name << " of " << type);
  static const std::string none;
  return none;
}

}  // namespace

TEST_CASE("a memory-bound best tries vector width before block shape, and says which reading chose it", "[tuner][counters]") {
  BuiltinTuner t;
  ProposalContext ctx = best_read_as(rmsnorm_spec(), rmsnorm_spec().starter_source(), read_as(91, 30), 24);
  auto p = t.propose(ctx);
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK((*p)->description ==
        "tier 2: AK_VEC 1 -> 2 (first because the best is memory-bound (at 91% of DRAM peak): fewer bytes, not more threads)");
  // Every vector width before any block shape.
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) {
    auto next = t.propose(ctx);
    REQUIRE(next.ok());
    REQUIRE(next->has_value());
    order.push_back((*next)->description.substr(0, (*next)->description.find(" (")));
    // Kept, so that no structure switch is due; the best (and its counters) stay the baseline's.
    ctx.history.push_back({(*next)->description, (*next)->source, "PASS", 120, true, "", (*next)->move, 2 + i});
  }
  CHECK(order == std::vector<std::string>{"tier 2: AK_VEC 1 -> 2", "tier 2: AK_VEC 1 -> 4", "tier 2: AK_VEC 1 -> 8",
                                          "tier 1: AK_THREADS 256 -> 128"});
}

TEST_CASE("a register-limited best tries fewer values a thread first", "[tuner][counters]") {
  BuiltinTuner t;
  HardwareCounters c = read_as(30, 25);
  c.occupancy = OccupancyLimit{1, 25, "registers", 1, -1, 8, 32};
  const std::string& file = variant_file("rmsnorm", "row_in_registers");
  ProposalContext ctx = best_read_as(rmsnorm_spec(), file, c, 128);
  auto p = t.propose(ctx);
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK_THAT((*p)->description, Catch::StartsWith("tier 2: AK_VEC 8 -> 4 (first because the best is register-limited (128 registers"));
}

TEST_CASE("a tensor-core kernel stalled on barriers tries more stages first", "[tuner][counters]") {
  BuiltinTuner t;
  const std::string& file = variant_file("matmul", "mma_pipeline");
  ProposalContext ctx = best_read_as(matmul_spec(), file, read_as(20, 35, {{"barrier", 0.4}, {"long_scoreboard", 0.2}}), 168);
  auto p = t.propose(ctx);
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK_THAT((*p)->description, Catch::StartsWith("tier 2: AK_STAGES 3 -> ") &&
                                    Catch::Contains("(first because the best is stalled on barriers (40% of warp cycles at barriers)"));
  CHECK(read_knobs((*p)->source).at("AK_STAGES") > 3);
}

TEST_CASE("without counters the tuner keeps its playbook order", "[tuner][counters]") {
  BuiltinTuner t;
  ProposalContext ctx = best_read_as(rmsnorm_spec(), rmsnorm_spec().starter_source(),
                                     HardwareCounters::unavailable_because("turned off"), 24);
  auto p = t.propose(ctx);
  REQUIRE(p.ok());
  REQUIRE(p->has_value());
  CHECK((*p)->description == "tier 1: AK_THREADS 256 -> 128");
}

TEST_CASE("with ordering by counters turned off, a memory-bound best gets the playbook order", "[tuner][counters]") {
  const HardwareCounters memory_bound = read_as(91, 30);
  auto first_moves = [&](BuiltinTuner& t, const HardwareCounters& c) {
    ProposalContext ctx = best_read_as(rmsnorm_spec(), rmsnorm_spec().starter_source(), c, 24);
    std::vector<std::string> order;
    for (int i = 0; i < 4; ++i) {
      auto next = t.propose(ctx);
      REQUIRE(next.ok());
      REQUIRE(next->has_value());
      order.push_back((*next)->description);
      ctx.history.push_back({(*next)->description, (*next)->source, "PASS", 120, true, "", (*next)->move, 2 + i});
    }
    return order;
  };
  BuiltinTuner off(false), on(true);
  const auto off_order = first_moves(off, memory_bound);
  // The same moves as a tuner that never had readings, and none of them says a reading chose it.
  CHECK(off_order == first_moves(on, HardwareCounters::unavailable_because("turned off")));
  CHECK(off_order.front() == "tier 1: AK_THREADS 256 -> 128");
  for (auto& d : off_order) CHECK(d.find("first because") == std::string::npos);
  CHECK(first_moves(on, memory_bound).front().find("first because the best is memory-bound") != std::string::npos);
}
