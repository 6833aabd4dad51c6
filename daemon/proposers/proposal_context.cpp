#include "daemon/proposers/proposal_context.hpp"

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "common/file_text.hpp"
#include "common/untrusted_text.hpp"
#include "daemon/run_folder/in_flight_ledger.hpp"
#include "daemon/run_folder/state_file.hpp"
#include "harness/judging/device_peaks.hpp"
#include "kernels_cuda/registry.hpp"

namespace ak {
namespace {

std::string experiment_path(const std::string& root, long long n, const std::string& tag) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lld", n);
  return root + "/experiments/" + buf + "-" + tag + ".cu";
}

/// What a recorded experiment's verdict file adds to its row: the compile log, and the compiler's
/// view of the entry point for one that passed.
void read_verdict_details(const std::string& candidate_path, PastExperiment& e) {
  auto text = read_file_text(candidate_path.substr(0, candidate_path.size() - 3) + ".verdict.json");
  if (!text) return;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object()) return;
  auto integer = [&](const char* key, int fallback) {
    return j.contains(key) && j[key].is_number_integer() ? j[key].get<int>() : fallback;
  };
  if (j.contains("compile_log") && j["compile_log"].is_string())
    e.compile_log = untrusted_text(j["compile_log"].get<std::string>(), kCompileLogBytes);
  if (e.correctness != "PASS") return;
  e.registers = integer("registers", -1);
  e.spill_bytes = integer("spill_bytes", 0);
  e.smem_bytes = integer("static_smem_bytes", 0);
  if (j.contains("counters") && j["counters"].is_object()) {
    HardwareCounters c;
    try {
      c = j["counters"].get<HardwareCounters>();
    } catch (const nlohmann::json::exception&) {
      return;   // a hand-edited or damaged file: no readings rather than wrong ones
    }
    // The reason may quote the harness's checks of the candidate's output: data, not prose.
    if (!c.available()) c.unavailable = untrusted_line(c.unavailable, kMessageBytes);
    e.counters = std::move(c);
  }
}

}  // namespace

double cached_peak(const std::string& gpu, const std::string& unit) {
  if (gpu.empty()) return 0;
  GpuInfo probe;
  probe.name = gpu;
  // The cache names a file by the GPU's name, SM count and memory: the name's part is everything
  // before the SM count this probe lacks.
  const std::filesystem::path probe_path = peaks_cache_file(probe);
  const std::string file = probe_path.filename().string();
  const std::string prefix = file.substr(0, file.rfind("-0sm-") + 1);
  std::error_code ec;
  std::vector<std::filesystem::path> found;
  static const std::regex rest("[0-9]+sm-[0-9]+MiB\\.json");   // so "H100" never takes an "H100-PCIe" file
  for (const auto& entry : std::filesystem::directory_iterator(probe_path.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && std::regex_match(name.substr(prefix.size()), rest)) found.push_back(entry.path());
  }
  if (found.size() != 1) return 0;   // none, or GPUs of one name with other SM counts: not this one's for sure
  auto text = read_file_text(found.front().string());
  if (!text) return 0;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  const char* key = unit == "TFLOPS" ? "compute_tflops" : "bandwidth_gbps";
  return j.is_object() && j.contains(key) && j[key].is_number() ? std::max(0.0, j[key].get<double>()) : 0;
}

DeviceFacts device_facts(const std::vector<KernelProgress>& kernels, size_t index, const std::vector<std::string>& gpu_models) {
  const KernelProgress& k = kernels[index];
  DeviceFacts f{k.gpu, k.arch, k.unit, k.peak};
  if (f.unit.empty()) f.unit = k.spec->metric == Metric::GBps ? "GB/s" : "TFLOPS";
  for (const KernelProgress& other : kernels) {
    const bool same_model = k.model.empty() || other.model.empty() || other.model == k.model;
    if (f.gpu.empty() && !other.gpu.empty() && same_model) f.gpu = other.gpu, f.arch = other.arch;
    if (f.peak <= 0 && other.peak > 0 && other.unit == f.unit && same_model) f.peak = other.peak;
  }
  if (f.gpu.empty()) f.gpu = !k.model.empty() ? k.model : gpu_models.empty() ? "" : gpu_models.front();
  if (f.peak <= 0) f.peak = cached_peak(f.gpu, f.unit);
  return f;
}

ProposalContext proposal_context(const RunRecords& run, size_t index, std::vector<PastExperiment> in_flight) {
  const Config& cfg = *run.cfg;
  const KernelProgress& k = (*run.kernels)[index];
  ProposalContext ctx;
  ctx.spec = k.spec;
  ctx.experiment = run.next_experiment;
  ctx.tag = k.tag;
  ctx.shape = k.entry->shape;
  ctx.dtype = k.entry->dtype;
  ctx.best_throughput = k.best_throughput;
  ctx.baseline_us = k.baseline_us;
  ctx.keep_threshold = cfg.convergence.keep_threshold;
  const DeviceFacts facts = device_facts(*run.kernels, index, run.gpu_models);
  ctx.gpu = facts.gpu;
  ctx.arch = facts.arch.empty() && cfg.gpu.arch != "auto" ? cfg.gpu.arch : facts.arch;
  ctx.throughput_unit = facts.unit;
  ctx.peak = facts.peak;
  ctx.best_source = read_file_text(run.root + "/kernels/" + k.tag + ".cu").value_or("");
  ctx.first_file = !k.has_baseline;
  // A run folder of an older build keeps the contract version its kernel started with.
  if (auto kept = spec_for_file(k.spec->type, ctx.best_source); kept && !ctx.best_source.empty()) ctx.spec = *kept;
  ctx.best_us = k.best_us;
  ctx.pct_peak = k.best_pct_peak;
  std::set<long long> standing;
  for (const ResultRow& r : standing_bests(*run.rows, k.tag)) standing.insert(r.experiment);
  for (const ResultRow& r : *run.rows) {
    if (r.tag != k.tag) continue;
    PastExperiment e;
    e.experiment = r.experiment;
    e.description = r.description;
    const std::string candidate = experiment_path(run.root, r.experiment, r.tag);
    e.source = read_file_text(candidate).value_or("");
    e.correctness = r.correctness;
    e.latency_us = r.latency_us;
    e.kept = r.kept;
    e.move = r.move;
    e.failure = untrusted_line(r.failure, kMessageBytes);
    e.predicted_us = r.predicted_us;
    e.paired_ratio = r.paired_ratio;
    e.paired_noise = r.paired_noise;
    e.standing = r.kept && standing.count(r.experiment) && r.correctness != kBestDemoted;
    read_verdict_details(candidate, e);
    ctx.history.push_back(e);
  }
  ctx.in_flight = std::move(in_flight);
  KernelBudget& b = ctx.budget;
  b.experiments = k.experiments;
  b.reverts_in_a_row = k.consecutive_reverts;
  b.max_reverts = cfg.convergence.max_consecutive_reverts;
  b.broken_in_a_row = k.broken_in_a_row;
  b.max_broken = cfg.convergence.max_broken_in_a_row;
  b.target_pct_peak = cfg.convergence.peak_fraction;
  b.target_speedup = cfg.convergence.target_speedup;
  b.hours_spent = k.seconds / 3600;
  b.max_hours = cfg.convergence.max_hours_per_kernel;
  b.first_tries = k.first_tries;
  b.max_first_tries = cfg.convergence.first_candidate_tries;
  if (auto n = run.notes->find(k.tag); n != run.notes->end()) {
    ctx.scratchpad = n->second.scratchpad;
    ctx.shown_variant = n->second.show_variant;
  }
  ctx.max_prompt_bytes = size_t(cfg.llm.max_prompt_bytes);
  return ctx;
}

Result<ProposalContext> next_proposal_context(const Config& cfg, const std::string& root, const std::string& tag) {
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) return error(root + ": no such run folder (give the workdir/name of a run)");
  auto table = read_results_table(root + "/results.tsv");
  if (!table) return table.error();
  std::vector<KernelProgress> kernels = initial_progress(cfg);
  auto at = std::find_if(kernels.begin(), kernels.end(), [&](const KernelProgress& k) { return k.tag == tag; });
  if (at == kernels.end()) {
    std::string tags;
    for (auto& k : kernels) tags += (tags.empty() ? "" : ", ") + k.tag;
    return error("the config lists no kernel '" + tag + "' (its kernels: " + tags + ")");
  }
  long long next = 1;
  for (const ResultRow& r : table->rows) {
    apply_row(kernels, r);
    next = std::max(next, r.experiment + 1);
  }
  auto state = read_state_file(root + "/state.json");
  if (!state) return state.error();
  if (state->contains("kernels"))
    for (auto& jk : (*state)["kernels"])
      for (auto& k : kernels)
        if (k.tag == jk.value("tag", "")) {
          k.model = jk.value("gpu_model", "");
          k.gpu = jk.value("gpu", "");
          k.arch = jk.value("arch", "");
          k.unit = jk.value("unit", "");
          k.peak = jk.value("peak", 0.0);
        }
  std::vector<std::string> models;
  if (state->contains("gpus"))
    for (auto& g : (*state)["gpus"]) models.push_back(g.value("model", ""));
  std::map<std::string, ModelNotes> notes;
  auto mine = read_model_notes(root, tag);
  if (!mine) return mine.error();
  notes[tag] = *mine;
  InFlightLedger ledger(root + "/in_flight.json");
  if (auto s = ledger.load(); !s) return s.error();
  next = std::max(next, ledger.highest() + 1);
  std::vector<PastExperiment> in_flight;
  for (const InFlight& e : ledger.entries())
    if (e.tag == tag) {
      PastExperiment p;
      p.description = e.description;
      p.source = read_file_text(experiment_path(root, e.experiment, e.tag)).value_or("");
      p.correctness = "IN_FLIGHT";
      p.move = e.structure_move ? MoveKind::Structure : MoveKind::Edit;
      in_flight.push_back(p);
    }
  RunRecords run{&cfg, root, &table->rows, &kernels, &notes, models, next};
  return proposal_context(run, size_t(at - kernels.begin()), std::move(in_flight));
}

}  // namespace ak
