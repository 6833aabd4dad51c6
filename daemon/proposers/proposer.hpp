#pragma once
/// The seam where edits come from: the LLM client or the builtin tuner, one edit per call.
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "harness/gpu/hardware_counters.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// One past experiment of a kernel, as a proposer sees it.
struct PastExperiment {
  std::string description;
  std::string source;          ///< the candidate file
  std::string correctness;     ///< PASS, FAIL, ...
  double latency_us = 0;
  bool kept = false;
  std::string failure;         ///< the message of a failed one
  MoveKind move = MoveKind::Edit;
  long long experiment = 0;    ///< its number in the run
  double predicted_us = 0;     ///< the time its proposer predicted (0: none)
  std::string compile_log;     ///< the compiler's log of a COMPILE_ERROR, as the verdict kept it
  // What the verdict of a judged candidate carried (the compiler's view at the timed dtype, and
  // the pairing with the best).
  double paired_ratio = 0, paired_noise = 0;
  int registers = -1, spill_bytes = 0, smem_bytes = 0;
  /// What the counters pass read of a judged candidate (or why it could not); unset when its
  /// verdict has none (a failed candidate, an older run).
  std::optional<HardwareCounters> counters;
  bool standing = false;       ///< a kept row that is still part of the best's lineage
};

/// Where a kernel stands against its stop rules, for the prompt: the model is told its budget.
struct KernelBudget {
  int experiments = 0;               ///< of this kernel, recorded so far
  int reverts_in_a_row = 0, max_reverts = 0;
  /// Broken proposals (a compile error, an unusable or cut reply) in a row: counted apart from
  /// the reverts, with a cap of their own.
  int broken_in_a_row = 0, max_broken = 0;
  double target_pct_peak = 0, target_speedup = 0;
  double hours_spent = 0, max_hours = 0;
  /// A user type's first files that failed, against [convergence] first_candidate_tries.
  int first_tries = 0, max_first_tries = 0;
};

struct ProposalContext {
  const KernelSpec* spec = nullptr;
  long long experiment = 0;    ///< the number this proposal will run under
  std::string tag;             ///< the kernel's id in the run
  Shape shape;
  std::string dtype;
  std::string best_source;     ///< the current best file
  /// No file yet: a user type with no starter, whose first file the LLM writes (best_source empty).
  bool first_file = false;
  double best_us = 0;
  double best_throughput = 0;
  double pct_peak = 0;
  double baseline_us = 0;
  double keep_threshold = 0.01;
  // The device this kernel is judged on: its name, arch, and the measured peak of the resource
  // that bounds this kernel (known per kernel, before its first verdict where the run has one).
  std::string gpu, arch, throughput_unit;
  double peak = 0;             ///< in throughput_unit
  std::vector<PastExperiment> history;   ///< this kernel's experiments, oldest first
  /// Candidates of this kernel being judged now on other GPUs (not to be proposed again).
  std::vector<PastExperiment> in_flight;
  KernelBudget budget;
  /// The notes the model keeps for this kernel (what to avoid, what to try), as it last wrote them.
  std::string scratchpad;
  /// A structure of the library the model asked to see (its name), shown in this prompt.
  std::string shown_variant;
  /// The prompt's size limit in bytes ([llm] max_prompt_bytes); 0: the default.
  size_t max_prompt_bytes = 0;
};

/// The experiment that made the current best (the last of the standing lineage), or null.
inline const PastExperiment* current_best_experiment(const ProposalContext& ctx) {
  for (auto it = ctx.history.rbegin(); it != ctx.history.rend(); ++it)
    if (it->standing) return &*it;
  return nullptr;
}

/// The latest experiment other than the current best's, or null.
inline const PastExperiment* last_candidate(const ProposalContext& ctx) {
  const PastExperiment* best = current_best_experiment(ctx);
  for (auto it = ctx.history.rbegin(); it != ctx.history.rend(); ++it)
    if (&*it != best) return &*it;
  return nullptr;
}

/// How the description of a proposal that switches a kernel to another structure
/// (kernels_cuda/variants.hpp) begins, for people. What counts is its MoveKind::Structure: a revert
/// of one does not count toward "reverts in a row", which count within a structure, so a run does
/// not end before the variants were tried; a description's words never decide that.
inline constexpr const char* kStructureMove = "structure: ";

struct Proposal {
  std::string source;
  std::string description;     ///< one line
  long long tokens = 0;        ///< LLM tokens spent on it
  double cost_usd = 0;
  MoveKind move = MoveKind::Edit;
  double predicted_us = 0;     ///< the proposer's prediction of its time (0: none)
  /// The model's notes rewritten with this proposal (nullopt: it wrote none, keep the old ones).
  std::optional<std::string> scratchpad;
  std::string show_variant;    ///< a library structure the model asked to see next time
  /// The proposer keeps notes for the kernel (an LLM): its scratchpad and show_variant replace
  /// the kept ones. A proposer that keeps none (the builtin tuner) leaves them as they are.
  bool keeps_notes = false;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  /// The next edit; nullopt when the proposer has nothing left to try for this kernel.
  /// An Error is a proposal that failed (an unusable LLM answer) and is recorded as such.
  virtual Result<std::optional<Proposal>> propose(const ProposalContext& ctx) = 0;
  /// After a failed proposal: set when the run cannot go on (a refused API key, a wrong URL),
  /// with what the user must fix.
  virtual std::optional<std::string> must_stop() const { return std::nullopt; }
  /// 0: proposing is cheap and deterministic; the loop asks on its own thread, one at a time,
  /// so that each proposal sees the ones in flight. N: proposing is slow (an LLM); the loop asks
  /// from the experiments' threads, at most N at once, and propose() must be thread-safe.
  virtual int concurrency() const { return 0; }
};

}  // namespace ak
