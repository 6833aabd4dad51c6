#include "daemon/report/kernelbench_scores.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "daemon/run_folder/kernel_progress.hpp"
#include "kernels_cuda/registry.hpp"

namespace ak {

bool is_user_type(const std::string& kernel_type) { return find_builtin_spec(kernel_type) == nullptr; }

namespace {

/// experiments/NNNN-<tag>.verdict.json, as RunLoop::verdict_file names it.
std::string verdict_path(long long experiment, const std::string& tag) {
  char number[32];
  std::snprintf(number, sizeof number, "%04lld", experiment);
  return "experiments/" + std::string(number) + "-" + tag + ".verdict.json";
}

/// A row the harness judged, so it has a verdict file (the daemon's own rows name no Correctness).
bool judged(const ResultRow& r) { return parse_correctness(r.correctness).has_value(); }

const Verdict* verdict_of(const RunVerdicts& verdicts, long long experiment) {
  auto it = verdicts.by_experiment.find(experiment);
  return it == verdicts.by_experiment.end() ? nullptr : &it->second;
}

ProblemScore score(const std::string& tag, const std::vector<ResultRow>& rows, const RunVerdicts& verdicts) {
  ProblemScore p;
  p.tag = tag;
  std::vector<KernelProgress> progress(1);
  progress[0].tag = tag;
  std::vector<const Verdict*> judged_verdicts;   // the tag's, in experiment order
  for (const ResultRow& r : rows) {
    if (r.tag != tag) continue;
    if (p.kernel_type.empty()) p.kernel_type = r.kernel_type;
    apply_row(progress, r);   // the best's time as `status` has it, a best timed again included
    if (const Verdict* v = judged(r) ? verdict_of(verdicts, r.experiment) : nullptr) judged_verdicts.push_back(v);
  }
  const std::vector<ResultRow> bests = standing_bests(rows, tag);
  p.correct = !bests.empty();
  if (p.correct) {
    p.best_us = progress[0].best_us;
    const Verdict* best = verdict_of(verdicts, bests.back().experiment);
    p.kernelbench_correct = best && best->kernelbench_pass.value_or(false);
    if (p.kernelbench_correct) p.kernelbench_us = p.best_us;
  } else {
    for (const Verdict* v : judged_verdicts) {
      if (!v->kernelbench_pass.value_or(false)) continue;
      p.kernelbench_correct = true;
      // A time the harness distrusts (SUSPECT: faster than the device can be) is no time.
      if (v->timing && v->timing->median_us > 0 && v->correctness != Correctness::Suspect)
        p.kernelbench_us = p.kernelbench_us > 0 ? std::min(p.kernelbench_us, v->timing->median_us) : v->timing->median_us;
    }
  }
  // The baselines are timed in the baseline experiment; any later verdict of the same worker
  // repeats them, and a run whose baseline failed may still have them from another.
  const Verdict* timed = p.correct ? verdict_of(verdicts, bests.front().experiment) : nullptr;
  if (!timed || timed->reference_us <= 0)
    for (const Verdict* v : judged_verdicts)
      if (v->reference_us > 0) {
        timed = v;
        break;
      }
  if (timed && timed->reference_us > 0) p.eager_us = timed->reference_us, p.compile_us = timed->torch_compile_us;
  return p;
}

ProblemScore score_builtin(const BuiltinProblem& b, const std::vector<ResultRow>& rows,
                           const std::vector<ProblemBaseline>& baselines) {
  ProblemScore p;
  p.tag = b.tag;
  p.kernel_type = b.type;
  p.builtin_problem = b.problem;
  std::vector<KernelProgress> progress(1);
  progress[0].tag = b.tag;
  for (const ResultRow& r : rows)
    if (r.tag == b.tag) apply_row(progress, r);
  p.correct = !standing_bests(rows, b.tag).empty();
  if (p.correct) p.best_us = progress[0].best_us;
  p.kernelbench_correct = p.correct && builtin_tolerance_within_kernelbench(b.type, b.dtype);
  if (p.kernelbench_correct) p.kernelbench_us = p.best_us;
  for (const ProblemBaseline& t : baselines)
    if (t.tag == b.tag) p.eager_us = t.eager_us, p.compile_us = t.compile_us;
  return p;
}

std::string beside_run(const std::string& run_dir, const std::string& suffix) {
  const std::filesystem::path dir = std::filesystem::absolute(run_dir).lexically_normal();
  const std::filesystem::path run = dir.filename().empty() ? dir.parent_path() : dir;
  return (run.parent_path().parent_path() / (run.filename().string() + suffix)).string();
}

}  // namespace

bool builtin_tolerance_within_kernelbench(const std::string& builtin_type, const std::string& dtype) {
  const KernelSpec* spec = find_builtin_spec(builtin_type);
  const auto d = parse_dtype(dtype);
  if (!spec || !d || !spec->tolerance) return false;
  const double theirs = *d == DType::F32 ? 1e-4 : 1e-2;   // KernelBench's get_tolerance_for_precision at 423217d
  const Tolerance ours = spec->tolerance(*d);
  return ours.atol <= theirs && ours.rtol <= theirs;
}

std::string default_builtin_problems_path(const std::string& run_dir) { return beside_run(run_dir, ".builtin.tsv"); }
std::string default_problem_baselines_path(const std::string& run_dir) { return beside_run(run_dir, ".baselines.tsv"); }

RunVerdicts read_user_type_verdicts(const std::string& run_dir, const std::vector<ResultRow>& rows) {
  RunVerdicts out;
  for (const ResultRow& r : rows) {
    if (!judged(r) || !is_user_type(r.kernel_type)) continue;
    const std::string name = verdict_path(r.experiment, r.tag);
    std::ifstream in(run_dir + "/" + name);
    if (!in) {
      out.unreadable.push_back(name + " (missing)");
      continue;
    }
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_object()) {
      out.unreadable.push_back(name + " (not JSON)");
      continue;
    }
    try {
      out.by_experiment[r.experiment] = j.get<Verdict>();
    } catch (const nlohmann::json::exception& e) {
      out.unreadable.push_back(name + " (not a verdict: " + e.what() + ")");
    }
  }
  return out;
}

Result<std::vector<RefusedProblem>> read_kernelbench_refusals(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error(path + ": cannot read (the refusals `autokernel kernelbench` writes beside its config)");
  std::vector<RefusedProblem> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (number == 1 && line == "file\treason") continue;
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    if (tab == std::string::npos || line.find('\t', tab + 1) != std::string::npos || tab == 0)
      return error(path + " line " + std::to_string(number) + ": expected \"file<TAB>reason\"; write it again with "
                   "`autokernel kernelbench`");
    out.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return out;
}

std::string default_refusals_path(const std::string& run_dir) {
  const std::filesystem::path dir = std::filesystem::absolute(run_dir).lexically_normal();
  const std::filesystem::path run = dir.filename().empty() ? dir.parent_path() : dir;
  return (run.parent_path().parent_path() / (run.filename().string() + ".refused.tsv")).string();
}

KernelBenchScores kernelbench_scores(const std::vector<ResultRow>& rows, const RunVerdicts& verdicts,
                                     const std::vector<RefusedProblem>& refused, const std::vector<BuiltinProblem>& builtin,
                                     const std::vector<ProblemBaseline>& baselines) {
  KernelBenchScores s;
  s.unreadable = verdicts.unreadable;
  s.refused = refused;
  std::vector<std::string> tags;
  for (const ResultRow& r : rows)
    if (is_user_type(r.kernel_type) && std::find(tags.begin(), tags.end(), r.tag) == tags.end()) tags.push_back(r.tag);
  for (const std::string& tag : tags) s.problems.push_back(score(tag, rows, verdicts));
  for (const BuiltinProblem& b : builtin) s.problems.push_back(score_builtin(b, rows, baselines));
  s.builtin = int(builtin.size());
  for (double p : {0.0, 1.0, 1.5, 2.0}) {
    FastP f{p};
    // KernelBench's fast_p: correct AND speedup > p; an unmeasured baseline makes no problem fast.
    // fast_0 is correctness alone: a correct problem counts whether or not a baseline was timed.
    for (const ProblemScore& q : s.problems) {
      if (p == 0) {
        f.eager += q.correct, f.compile += q.correct;
        f.kernelbench_eager += q.kernelbench_correct, f.kernelbench_compile += q.kernelbench_correct;
        continue;
      }
      f.eager += q.correct && q.speedup_eager() > p;
      f.compile += q.correct && q.speedup_compile() > p;
      f.kernelbench_eager += q.kernelbench_correct && q.kernelbench_speedup_eager() > p;
      f.kernelbench_compile += q.kernelbench_correct && q.kernelbench_speedup_compile() > p;
    }
    s.fast_p.push_back(f);
  }
  for (const ProblemScore& q : s.problems) s.without_eager += q.eager_us <= 0, s.without_compile += q.compile_us <= 0;
  return s;
}

}  // namespace ak
