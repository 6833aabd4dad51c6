#include "daemon/proposers/prompt_guidance.hpp"

#include "common/format.hpp"
#include "daemon/proposers/bottleneck.hpp"

namespace ak {

std::string budget_text(const ProposalContext& ctx) {
  const KernelBudget& b = ctx.budget;
  std::string t = "This is experiment " + std::to_string(ctx.experiment) + " of the run, number " +
                  std::to_string(b.experiments + 1) + " on this kernel.\n";
  if (ctx.first_file) {
    t += "First files that failed so far: " + std::to_string(b.first_tries) + " of " + std::to_string(b.max_first_tries) +
         " (the kernel stops at " + std::to_string(b.max_first_tries) + " without a passing first file).\n";
    return t + "Once a first file passes, the reverts and broken proposals are counted against their own caps.";
  }
  t += "Reverts in a row: " + std::to_string(b.reverts_in_a_row) + " of " + std::to_string(b.max_reverts) +
       " (a file that is correct but not faster, or wrong, counts; a kept file resets it; the kernel stops at " +
       std::to_string(b.max_reverts) + ").\n";
  t += "Broken proposals in a row: " + std::to_string(b.broken_in_a_row) + " of " + std::to_string(b.max_broken) +
       " (a file that does not compile, or a reply without a usable file: not a revert, but the kernel stops at " +
       std::to_string(b.max_broken) + ").\n";
  t += format_numbers("The kernel is done at %.0f%% of the measured peak once no slower than its baseline, at %.2fx over it, ",
                      b.target_pct_peak * 100,
                      b.target_speedup) +
       format_numbers("or after %.2f h of GPU time (%.2f h spent).", b.max_hours, b.hours_spent);
  return t;
}

std::string phase_text(const ProposalContext& ctx) {
  const KernelBudget& b = ctx.budget;
  if (ctx.first_file)
    return "First file: make it correct on every shape and dtype, and plainly fast; the edits after it make it faster.";
  if (ctx.pct_peak > 0 && ctx.pct_peak < kRadicalBelowPeak && b.reverts_in_a_row >= kRadicalAfterReverts)
    return format_numbers("Stuck: %.0f%% of the roofline after %.0f reverts in a row. Tweaks will not close this gap: make a "
                          "radical change (another structure, from the library or your own; another algorithm or data "
                          "layout; one pass over the data instead of several).",
                          ctx.pct_peak * 100, double(b.reverts_in_a_row));
  if (ctx.pct_peak >= kCombineFromPeak || (b.max_reverts >= 3 && b.reverts_in_a_row >= b.max_reverts - 2))
    return "Late: combine wins. Ideas that passed close to the best (a ratio within its noise of 1) may add up when applied "
           "together to the best file; prefer small, safe changes over new structures.";
  return "Explore: follow the playbook's tiers in order, one idea per experiment, each with its predicted effect.";
}

namespace {

/// One experiment's line: who it is, the bottleneck, and the readings that back it.
std::string limits_line(const std::string& who, const PastExperiment& e) {
  std::string line = who + " (experiment " + std::to_string(e.experiment) +
                     (e.latency_us > 0 ? format_numbers(", %.2f us", e.latency_us) : std::string()) + "): ";
  if (!e.counters) return line + "no counters recorded (" + (e.correctness == "PASS" ? "counters were off or the verdict is older" : "it did not pass") + ").";
  const HardwareCounters& c = *e.counters;
  if (!c.available()) return line + "no counters: " + c.unavailable + ".";
  line += diagnose(c, e.registers, e.spill_bytes).sentence() + ".";
  line += " " + std::to_string(e.registers) + " registers, " + std::to_string(e.spill_bytes) + " bytes spilled";
  if (c.occupancy)
    line += format_numbers("; occupancy %.0f%% of %.0f%% possible", c.achieved_occupancy_pct.value_or(0), c.occupancy->theoretical_pct) +
            " (limited by " + c.occupancy->limiter + ")";
  line += format_numbers("; DRAM %.0f%%, SM %.0f%%", c.dram_pct.value_or(0), c.sm_pct.value_or(0));
  if (c.tensor_pct && *c.tensor_pct >= 1) line += format_numbers(", tensor pipe %.0f%%", *c.tensor_pct);
  if (c.l2_hit_pct) line += format_numbers(", L2 hits %.0f%%", *c.l2_hit_pct);
  if (c.bank_conflict_ratio && *c.bank_conflict_ratio >= 0.05)
    line += format_numbers(", %.0f%% of shared-memory traffic is bank-conflict replays", *c.bank_conflict_ratio * 100);
  std::string waits;
  for (size_t i = 0, shown = 0; i < c.stalls.size() && shown < 2; ++i) {
    if (c.stalls[i].reason == "selected") continue;
    waits += (shown++ ? ", " : "") + format_numbers("%.0f%% ", c.stalls[i].share * 100) + stall_words(c.stalls[i].reason);
  }
  if (!waits.empty()) line += "; warps: " + waits;
  return line + ".";
}

}  // namespace

std::string limits_text(const ProposalContext& ctx) {
  const PastExperiment* best = current_best_experiment(ctx);
  const PastExperiment* last = last_candidate(ctx);
  if (!best && !last) return "No hardware counters yet: they come with the first verdict.";
  std::string t;
  if (best) t += limits_line("Current best", *best);
  if (last) t += std::string(t.empty() ? "" : "\n") + limits_line("Last candidate", *last);
  return t;
}

}  // namespace ak
