#include "daemon/loop/run_loop.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/atomic_write.hpp"
#include "common/format.hpp"
#include "common/text_escape.hpp"
#include "daemon/loop/scheduler.hpp"
#include "daemon/proposers/model_notes.hpp"
#include "daemon/run_folder/state_file.hpp"
#include "kernels_cuda/registry.hpp"

namespace ak {

RunLoop::RunLoop(Config cfg, std::vector<GpuWorker> gpus, Proposer& proposer, Clock& clock, LoopSignals signals,
                 ServiceNotifier* notifier)
    : cfg_(std::move(cfg)), gpus_(std::move(gpus)), proposer_(proposer), clock_(clock), signals_(signals),
      notifier_(notifier), dir_(cfg_.run_dir()), threads_(gpus_.size()) {}

RunLoop::RunLoop(Config cfg, Evaluator& evaluator, Proposer& proposer, Clock& clock, LoopSignals signals,
                 ServiceNotifier* notifier)
    : RunLoop(cfg, {GpuWorker{cfg.gpu.device, "", &evaluator}}, proposer, clock, signals, notifier) {}

RunLoop::~RunLoop() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

Status RunLoop::open() {
  if (auto s = dir_.create(); !s) return s;
  if (auto s = dir_.lock(); !s) return s;
  auto rows = open_results(dir_.results());
  if (!rows) return rows.error();
  rows_ = std::move(*rows);
  auto git = GitHistory::open(dir_.root(), "autokernel/" + cfg_.run.name);
  if (!git) return git.error();
  git_ = std::move(*git);
  if (auto s = recover_from_git(); !s) return s;
  kernels_ = initial_progress(cfg_);
  std::set<std::string> tags;
  for (auto& k : kernels_) tags.insert(k.tag);
  for (auto& r : rows_) {
    if (!tags.count(r.tag))
      return error(dir_.results() + " has experiments of '" + r.tag +
                   "', which the config no longer lists: restore its [[kernel]] entry or start a new run name");
    apply_row(kernels_, r);
    next_experiment_ = std::max(next_experiment_, r.experiment + 1);
  }
  for (auto& r : rows_) wall_before_ += r.seconds;   // a run folder from before wall_seconds was kept
  // state.json holds the totals rows do not carry; a damaged one stops the start rather than
  // restart the cost budget from nothing.
  auto state = read_state_file(dir_.state());
  if (!state) return state.error();
  const nlohmann::json& j = *state;
  cost_usd_ = j.value("llm_cost_usd", 0.0);
  wall_before_ = j.value("wall_seconds", wall_before_);
  if (j.contains("kernels"))
    for (auto& jk : j["kernels"])
      for (auto& k : kernels_)
        if (k.tag == jk.value("tag", "")) {
          k.model = jk.value("gpu_model", "");
          k.gpu = jk.value("gpu", "");
          k.arch = jk.value("arch", "");
          k.unit = jk.value("unit", "");
          k.peak = jk.value("peak", 0.0);
        }
  for (auto& k : kernels_) {
    auto notes = read_model_notes(dir_.root(), k.tag);
    if (!notes) return notes.error();
    notes_[k.tag] = *notes;
  }
  session_start_ = clock_.now_s();
  gpu_time_ = GpuTime(gpus_.size(), session_start_);
  if (auto s = read_in_flight(); !s) return s;
  if (!rows_.empty())
    spdlog::info("resuming run {} at experiment {} ({} experiments recorded)", cfg_.run.name, next_experiment_, rows_.size());
  return restore_kernel_files();
}

Status RunLoop::read_in_flight() {
  ledger_ = std::make_unique<InFlightLedger>(dir_.in_flight());
  if (auto s = ledger_->load(); !s) return s;
  next_experiment_ = std::max(next_experiment_, ledger_->highest() + 1);
  std::set<long long> recorded;
  for (auto& r : rows_) recorded.insert(r.experiment);
  const std::vector<InFlight> entries = ledger_->entries();
  std::set<std::string> tags;
  for (auto& k : kernels_) tags.insert(k.tag);
  for (auto& e : entries) {
    if (!tags.count(e.tag)) {
      spdlog::warn("experiment {} was in flight on '{}', which the config no longer lists: its number stays unused",
                   e.experiment, e.tag);
      if (auto s = ledger_->remove(e.experiment); !s) return s;
      continue;
    }
    std::error_code ec;
    if (!recorded.count(e.experiment) &&
        std::filesystem::exists(dir_.path(dir_.experiment_file(e.experiment, e.tag)), ec)) {
      // The candidate is on disk: judged again under its own number, before anything new.
      spdlog::info("experiment {} ({}) was in flight when the daemon stopped: running it again", e.experiment, e.tag);
      to_rerun_.push_back(e);
      continue;
    }
    if (!recorded.count(e.experiment))
      spdlog::warn("experiment {} ({}) was waiting for its proposal when the daemon stopped: its number stays unused",
                   e.experiment, e.tag);
    if (auto s = ledger_->remove(e.experiment); !s) return s;
  }
  return ok();
}

Status RunLoop::recover_from_git() {
  auto head = git_->head();
  if (!head) return head.error();
  if (!*head) return ok();
  auto row = row_from_commit(**head);
  if (!row) {
    // One damaged commit does not cost the run: results.tsv is the truth, and a row it lacks is
    // recorded as lost rather than guessed.
    spdlog::warn("{}: skipped; results.tsv keeps the rows, and a row only that commit held is lost", row.error().message);
    return ok();
  }
  for (auto& r : rows_)
    if (r.experiment == row->experiment) return ok();
  // Killed between the commit and its row: the commit's trailers give the row back.
  spdlog::warn("experiment {} was committed ({}) but its results row is missing: restoring it from the commit",
               row->experiment, row->commit);
  if (auto s = append_result(dir_.results(), *row); !s) return s;
  rows_.push_back(*row);
  return ok();
}

Status RunLoop::restore_kernel_files() {
  // The working copy of each kernel is whatever was last kept: a file half-written by a crash,
  // or a candidate written before its evaluation, goes back to the committed version.
  for (auto& k : kernels_) {
    auto committed = git_->file_at_head(dir_.kernel_file(k.tag));
    if (!committed) return committed.error();
    if (*committed)
      if (auto s = write_file_atomic(dir_.path(dir_.kernel_file(k.tag)), **committed); !s) return s;
  }
  return ok();
}

ProposalContext RunLoop::context(size_t index) const {
  std::vector<PastExperiment> in_flight;
  for (auto& [n, job] : running_)
    if (job.kernel == index && !job.baseline) {
      PastExperiment e;
      e.description = job.proposal.description;
      e.source = job.proposal.source;
      e.move = job.proposal.move;
      e.correctness = "IN_FLIGHT";
      in_flight.push_back(e);
    }
  std::vector<std::string> models;
  for (auto& g : gpus_) models.push_back(g.model);
  RunRecords run{&cfg_, dir_.root(), &rows_, &kernels_, &notes_, models, next_experiment_};
  return proposal_context(run, index, std::move(in_flight));
}

std::string RunLoop::verdict_file(long long n, const std::string& tag) const {
  std::string f = dir_.experiment_file(n, tag);
  return f.substr(0, f.size() - 3) + ".verdict.json";
}

Status RunLoop::record(const ResultRow& row) {
  if (auto s = append_result(dir_.results(), row); !s) return s;
  at("recorded");
  rows_.push_back(row);
  apply_row(kernels_, row);
  for (KernelProgress& k : kernels_)
    if (k.tag == row.tag) k.harness_errors_in_a_row = row.correctness == kHarnessError ? k.harness_errors_in_a_row + 1 : 0;
  write_state("running");
  return ok();
}

void RunLoop::push_history() {
  if (cfg_.run.git_remote.empty()) return;
  // A remote that is down costs nothing kept: the branch is pushed whole at the next keep.
  if (auto s = git_->push(cfg_.run.git_remote); !s)
    spdlog::warn("{}; the commits stay in {} and go with the next push", s.error().message, dir_.root());
  else
    spdlog::debug("pushed {} to {}", "autokernel/" + cfg_.run.name, cfg_.run.git_remote);
}

double RunLoop::wall_seconds() const { return wall_before_ + (clock_.now_s() - session_start_); }

std::optional<std::string> RunLoop::budget_spent(bool in_flight) const {
  long long tokens = 0;
  for (auto& r : rows_) tokens += r.llm_tokens;
  const long long experiments = (long long)rows_.size() + (in_flight ? (long long)running_.size() : 0);
  if (cfg_.run.max_experiments > 0 && experiments >= cfg_.run.max_experiments)
    return "the experiment budget (" + std::to_string(cfg_.run.max_experiments) + ") is spent";
  if (cfg_.run.max_hours > 0 && wall_seconds() >= cfg_.run.max_hours * 3600)
    return format_numbers("the time budget (%.2f h) is spent", cfg_.run.max_hours);
  if (cfg_.llm.token_budget > 0 && tokens >= cfg_.llm.token_budget)
    return "the token budget (" + std::to_string(cfg_.llm.token_budget) + ") is spent";
  if (cfg_.llm.cost_budget_usd > 0 && cost_usd_ >= cfg_.llm.cost_budget_usd)
    return format_numbers("the cost budget ($%.2f) is spent", cfg_.llm.cost_budget_usd);
  return std::nullopt;
}

void RunLoop::reload_if_asked() {
  if (!signals_.reload || !signals_.reload->exchange(false)) return;
  auto fresh = load_config(cfg_.path);
  if (!fresh) {
    spdlog::error("SIGHUP: keeping the current settings: {}", fresh.error().message);
    return;
  }
  cfg_.run.max_hours = fresh->run.max_hours;
  cfg_.run.max_experiments = fresh->run.max_experiments;
  cfg_.convergence = fresh->convergence;
  cfg_.llm = fresh->llm;
  cfg_.harness = fresh->harness;
  if (on_reload) on_reload(cfg_);
  spdlog::info("SIGHUP: reloaded budgets, convergence, [harness] and [llm] from {} ([[kernel]] changes need a restart)",
               cfg_.path);
}

Result<RunOutcome> RunLoop::run() {
  if (auto s = open(); !s) return s.error();
  if (notifier_) notifier_->ready();
  std::string devices;
  for (auto& g : gpus_) devices += (devices.empty() ? "" : ", ") + std::to_string(g.device);
  spdlog::info("run {} in {}: {} kernels, proposer {}, GPU{} {}", cfg_.run.name, dir_.root(), kernels_.size(),
               provider_name(cfg_.llm.provider), gpus_.size() > 1 ? "s" : "", devices);
  RunOutcome out;
  std::optional<Error> failed;
  bool ending = false;
  for (;;) {
    if (notifier_) notifier_->alive();
    reload_if_asked();
    if (!ending && stop_requested()) {
      out = {RunOutcome::Stopped, "asked to stop", ""};
      ending = true;
      if (busy_gpus()) spdlog::info("stopping: {} experiment(s) in flight are run again at the next start", busy_gpus());
    }
    if (!ending)
      if (auto why = budget_spent()) out = {RunOutcome::BudgetSpent, *why, ""}, ending = true;
    if (!ending)
      if (auto s = dispatch_free_gpus(); !s) failed = s.error(), ending = true;
    if (busy_gpus() == 0) {
      if (!ending) out = {RunOutcome::Converged, pick_next(kernels_, cfg_.convergence).reason, ""};
      break;
    }
    if (ending) idle_free_gpus(GpuState::Ending);
    FinishedJob f = finished_.pop();
    if (f.proposed_only) {
      if (auto s = proposal_arrived(f.job); !s && !failed) failed = s.error(), ending = true;
      continue;
    }
    threads_[f.job.worker].join();
    gpu_time_.set(f.job.worker, GpuState::Loop, f.finished_s);
    const auto decided_from = std::chrono::steady_clock::now();
    Status decided = finish_guarded(std::move(f));
    decisions_.add(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - decided_from).count());
    if (auto s = decided; !s && !failed) {
      failed = s.error();
      ending = true;
      if (busy_gpus()) spdlog::error("{}; waiting for the {} other experiment(s) in flight", failed->message, busy_gpus());
    }
  }
  if (failed) {
    write_state("failed");
    return *failed;
  }
  push_history();  // what a failed push at a keep left behind
  if (decisions_.count())
    spdlog::info("the loop thread decided {} verdicts: {:.1f} ms each (median), {:.1f} ms at most; {} paired with a best "
                 "replaced while they ran ({} of them judged again); {} too noisy to decide, judged again with more launches",
                 decisions_.count(), decisions_.median_ms(), decisions_.max_ms(), stale_.count, stale_.judged_again,
                 noisy_judged_again_);
  spdlog::info("{}", gpu_time_.summary(clock_.now_s()));
  out.summary = summary();
  write_state(out.kind == RunOutcome::Converged ? "converged" : out.kind == RunOutcome::Stopped ? "stopped" : "budget spent");
  if (notifier_) notifier_->stopping();
  return out;
}

void RunLoop::write_state(const std::string& status) const {
  nlohmann::json j{{"run", cfg_.run.name}, {"status", status}, {"experiments", rows_.size()},
                   {"next_experiment", next_experiment_}, {"amdahl_speedup", amdahl_speedup(kernels_)}};
  long long tokens = 0;
  double seconds = 0;
  for (auto& r : rows_) tokens += r.llm_tokens, seconds += r.seconds;
  j["llm_tokens"] = tokens;
  j["llm_cost_usd"] = cost_usd_;
  j["seconds"] = seconds;
  j["wall_seconds"] = wall_seconds();
  j["decisions"] = decisions_.to_json();
  j["stale_verdicts"] = stale_.to_json();
  j["noisy_verdicts"] = {{"judged_again", noisy_judged_again_}};
  j["gpus"] = nlohmann::json::array();
  const double now = clock_.now_s();
  for (size_t w = 0; w < gpus_.size(); ++w) {
    auto d = doing_.find(w);
    j["gpus"].push_back({{"device", gpus_[w].device}, {"model", gpus_[w].model},
                         {"doing", d == doing_.end() ? std::string("idle") : d->second},
                         {"seconds", gpu_time_.to_json(w, now)}});
  }
  for (auto& k : kernels_) {
    auto c = converged(k, cfg_.convergence);
    j["kernels"].push_back({{"tag", k.tag}, {"type", k.spec->type}, {"shape", shape_str(k.entry->shape)},
                            {"dtype", k.entry->dtype}, {"weight", k.entry->weight}, {"baseline_us", k.baseline_us},
                            {"best_us", k.best_us}, {"speedup", k.speedup()}, {"baseline", k.baseline_source}, {"pct_peak", k.best_pct_peak},
                            {"throughput", k.best_throughput}, {"experiments", k.experiments},
                            {"consecutive_reverts", k.consecutive_reverts}, {"seconds", k.seconds},
                            {"in_flight", k.in_flight}, {"gpu_model", k.model}, {"gpu", k.gpu}, {"arch", k.arch},
                            {"unit", k.unit}, {"peak", k.peak}, {"broken_in_a_row", k.broken_in_a_row},
                            {"converged", c ? *c : ""}});
  }
  if (auto s = write_file_atomic(dir_.state(), json_dump(j, 2) + "\n"); !s) spdlog::warn("{}", s.error().message);
}

std::string RunLoop::summary() const {
  std::string s = "kernel        baseline us   best us   speedup  pct_peak  experiments  converged\n";
  std::string against;
  for (auto& k : kernels_) {
    auto c = converged(k, cfg_.convergence);
    char line[512];
    against += (against.empty() ? "" : "; ") + k.tag + ": " + k.baseline_source;
    std::snprintf(line, sizeof line, "%-12s %11.2f %9.2f %8.3fx %8.1f%% %12d  %s\n", k.tag.c_str(), k.baseline_us, k.best_us,
                  k.speedup(), k.best_pct_peak * 100, k.experiments, c ? c->c_str() : "no");
    s += line;
  }
  s += "speedups are against: " + against + "\n";
  s += format_numbers("whole program (Amdahl, weights as configured): %.3fx\n", amdahl_speedup(kernels_));
  return s;
}

}  // namespace ak
