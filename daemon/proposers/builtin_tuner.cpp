#include "daemon/proposers/builtin_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "daemon/proposers/bottleneck.hpp"
#include "daemon/proposers/knob_constraints.hpp"
#include "daemon/proposers/knobs.hpp"
#include "daemon/proposers/runner_up_moves.hpp"
#include "daemon/proposers/variant_moves.hpp"

namespace ak {

namespace {

/// Tile sizes, warp counts, pipeline stages and register capacities only make sense as powers
/// of two: a tile of 63 rows is a compile error, a row capacity of 8193 elements an experiment
/// spent on nothing.
bool is_power_of_two_knob(const std::string& knob) {
  for (const char* w : {"TILE", "BLOCK", "WARPS", "STAGES", "UNROLL", "CAPACITY"})
    if (knob.find(w) != std::string::npos) return true;
  return false;
}

bool has_word(const std::string& knob, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (knob.find(w) != std::string::npos) return true;
  return false;
}

}  // namespace

bool BuiltinTuner::addresses(const std::string& knob, Limit limit) {
  switch (limit) {
    case Limit::Memory:
    case Limit::MemoryLatency: return has_word(knob, {"VEC", "LOAD", "CACHE", "BYTES", "CAPACITY"});
    case Limit::Registers: return has_word(knob, {"TILE", "UNROLL", "CAPACITY", "VEC", "ITEMS"});
    case Limit::Barrier: return has_word(knob, {"STAGES"});
    case Limit::SharedConflicts: return has_word(knob, {"PAD", "SWIZZLE"});
    case Limit::TensorPipe: return has_word(knob, {"STAGES", "TILE"});
    case Limit::Compute: return has_word(knob, {"UNROLL", "VEC"});
    case Limit::Unknown: break;
  }
  return false;
}

bool BuiltinTuner::prefers_larger(const std::string& knob, Limit limit) {
  if (limit == Limit::Barrier || limit == Limit::TensorPipe) return has_word(knob, {"STAGES"});
  if (limit == Limit::Memory || limit == Limit::MemoryLatency) return has_word(knob, {"VEC"});
  return false;   // registers: fewer values a thread, so smaller tiles, vectors and unrolls first
}

int BuiltinTuner::tier(const std::string& knob) {
  for (const char* w : {"THREADS", "BLOCK", "ROWS", "WARPS", "TILE"})
    if (knob.find(w) != std::string::npos) return 1;
  for (const char* w : {"VEC", "LOAD", "CACHE", "STAGES"})
    if (knob.find(w) != std::string::npos) return 2;
  return 3;
}

std::vector<long long> BuiltinTuner::candidates(const std::string& knob, long long current) {
  std::vector<long long> values;
  if (knob.find("THREADS") != std::string::npos) values = {64, 128, 256, 512, 1024};
  else if (knob.find("VEC") != std::string::npos) values = {1, 2, 4, 8};
  else if (knob.find("ROWS") != std::string::npos) values = {1, 2, 4, 8};
  else if (is_power_of_two_knob(knob)) {
    for (long long v : {current / 2, current * 2, current / 4, current * 4})
      if (v >= 1) values.push_back(v);
  } else {
    values = {current / 2, current * 2, current + 1, current - 1};
  }
  values.erase(std::remove_if(values.begin(), values.end(), [&](long long v) { return v == current || v < 0; }),
               values.end());
  // Nearest first: on a log scale for the power-of-two knobs, which is every list above.
  std::stable_sort(values.begin(), values.end(), [&](long long a, long long b) {
    auto dist = [&](long long v) { return std::abs(std::log2(double(std::max(v, 1LL))) - std::log2(double(std::max(current, 1LL)))); };
    return dist(a) < dist(b);
  });
  return values;
}

Result<std::optional<Proposal>> BuiltinTuner::propose(const ProposalContext& ctx) {
  const Knobs best = read_knobs(ctx.best_source);
  if (best.empty())
    return error("the builtin tuner found no knob lines (#define AK_NAME value) in the " +
                 (ctx.spec ? ctx.spec->type : std::string("kernel")) + " file: nothing to tune");
  // Unknown addresses no knob: the playbook order, as before the counters were read.
  const Bottleneck limit = order_by_counters_ ? best_bottleneck(ctx) : Bottleneck{};
  std::optional<Proposal> knob_move = next_knob_move(ctx, best, limit);
  if (auto v = next_variant_move(ctx, knob_move.has_value())) return std::optional<Proposal>(*v);
  auto runner_up_knob = [&](const ProposalContext& as_if_best, const PastExperiment& from) {
    const Bottleneck its_limit = order_by_counters_ && from.counters ? diagnose(*from.counters, from.registers, from.spill_bytes)
                                                                     : Bottleneck{};
    return next_knob_move(as_if_best, read_knobs(from.source), its_limit);
  };
  if (auto r = next_runner_up_move(ctx, knob_move.has_value(), runner_up_knob)) return std::optional<Proposal>(*r);
  return knob_move;
}

Bottleneck BuiltinTuner::best_bottleneck(const ProposalContext& ctx) {
  const PastExperiment* best = current_best_experiment(ctx);
  if (!best || !best->counters) return {};
  return diagnose(*best->counters, best->registers, best->spill_bytes);
}

std::optional<Proposal> BuiltinTuner::next_knob_move(const ProposalContext& ctx, const Knobs& best,
                                                     const Bottleneck& limit) {
  std::set<std::string> measured;
  for (auto& e : ctx.history) measured.insert(configuration_key(e.source));
  for (auto& e : ctx.in_flight) measured.insert(configuration_key(e.source));   // judged on another GPU now
  measured.insert(configuration_key(ctx.best_source));
  std::vector<std::string> names;
  for (auto& [name, v] : best) names.push_back(name);
  // Within block sizing, threads per block first: it is the knob with the widest effect.
  auto order = [](const std::string& n) { return tier(n) * 2 + (n.find("THREADS") == std::string::npos); };
  std::stable_sort(names.begin(), names.end(), [&](auto& a, auto& b) { return order(a) < order(b); });
  auto values_of = [&](const std::string& name) {
    auto values = candidates(name, best.at(name));
    const long long current = best.at(name);
    if (prefers_larger(name, limit.limit))
      std::stable_partition(values.begin(), values.end(), [&](long long v) { return v > current; });
    else if (limit.limit == Limit::Registers && addresses(name, limit.limit))
      std::stable_partition(values.begin(), values.end(), [&](long long v) { return v < current; });
    return values;
  };
  auto try_move = [&](const std::string& name, size_t rank, bool chosen) -> std::optional<Proposal> {
    auto values = values_of(name);
    if (rank >= values.size()) return std::nullopt;
    Knobs next = best;
    next[name] = values[rank];
    const std::string source = with_knob(ctx.best_source, name, values[rank]);
    if (measured.count(configuration_key(source))) return std::nullopt;
    if (broken_assert(ctx.best_source, next)) return std::nullopt;   // would not compile: no experiment spent on it
    Proposal p;
    p.source = source;
    p.description = "tier " + std::to_string(tier(name)) + ": " + name + " " + std::to_string(best.at(name)) + " -> " +
                    std::to_string(values[rank]);
    if (chosen) {
      p.description += " (first because the best is " + limit.sentence() + ")";
      spdlog::info("{}: builtin tuner: {} chosen first: the best is {}", ctx.tag, name, limit.sentence());
    }
    return p;
  };
  // The knobs that address what the counters say limits the best go first, every value of
  // theirs before any other knob's (a memory-bound kernel: vector width before block shape).
  for (size_t rank = 0; rank < 8; ++rank)
    for (auto& name : names)
      if (addresses(name, limit.limit))
        if (auto p = try_move(name, rank, true)) return p;
  // Rank-major: every knob's nearest value first, in tier order, then every knob's next nearest,
  // skipping what was measured: one bad knob cannot use up the reverts before the others had a
  // chance.
  for (size_t rank = 0; rank < 8; ++rank)
    for (auto& name : names)
      if (auto p = try_move(name, rank, false)) return p;
  return std::nullopt;
}

}  // namespace ak
