#include "daemon/kernelbench/problem_baselines.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/gpu/gpu_context.hpp"
#include "harness/user_types/user_reference.hpp"
#include "kernels_cuda/user_type.hpp"

namespace ak {
namespace {

std::string cell(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

ProblemBaseline measure_one(GpuContext& gpu, const BuiltinProblem& p, const std::string& config_dir, int repetitions,
                            bool with_compile) {
  ProblemBaseline b;
  b.tag = p.tag;
  const std::filesystem::path spec_path = std::filesystem::path(config_dir) / p.spec;
  auto spec = load_user_type(spec_path.string());
  if (!spec) {
    b.note = "its spec: " + spec.error().message;
    return b;
  }
  auto reference = UserReference::start(gpu, *spec);
  if (!reference) {
    b.note = "the reference process: " + reference.error().message;
    return b;
  }
  auto measured = (*reference)->baseline(spec->bench, DType::F32, repetitions, with_compile);
  if (!measured) {
    b.note = "the baseline: " + measured.error().message;
    return b;
  }
  b.eager_us = measured->eager_us;
  b.compile_us = measured->compile_us;
  if (!with_compile) b.note = "torch.compile not measured";
  else if (!measured->compile_error.empty()) b.note = "torch.compile: " + measured->compile_error;
  return b;
}

}  // namespace

Result<std::vector<ProblemBaseline>> measure_problem_baselines(
    const std::vector<BuiltinProblem>& problems, const std::string& config_dir, int device, int repetitions,
    bool with_compile, const std::function<void(const std::vector<ProblemBaseline>&)>& after_each) {
  std::vector<ProblemBaseline> out;
  if (problems.empty()) return out;
  auto gpu = GpuContext::open(device);
  if (!gpu) return error("timing the problems' modules needs a GPU: " + gpu.error().message);
  // One reference process at a time, as a worker keeps them: each holds the problem's tensors at its timed size.
  for (const BuiltinProblem& p : problems) {
    out.push_back(measure_one(**gpu, p, config_dir, repetitions, with_compile));
    if (after_each) after_each(out);
  }
  return out;
}

std::string problem_baselines_text(const std::vector<ProblemBaseline>& baselines) {
  std::string t = "tag\teager_us\tcompile_us\tnote\n";
  for (auto& b : baselines) t += cell(b.tag) + "\t" + number(b.eager_us) + "\t" + number(b.compile_us) + "\t" + cell(b.note) + "\n";
  return t;
}

Result<std::vector<ProblemBaseline>> read_problem_baselines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error(path + ": cannot read (the problems' PyTorch times `autokernel kernelbench --baselines` writes)");
  std::vector<ProblemBaseline> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (n == 1 && line.rfind("tag\teager_us\t", 0) == 0) continue;
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cells.push_back(c);
    if (cells.size() == 3) cells.emplace_back();
    ProblemBaseline b;
    bool ok = cells.size() == 4 && !cells[0].empty();
    try {
      size_t used = 0;
      if (ok) b.eager_us = std::stod(cells[1], &used), ok = used == cells[1].size() && b.eager_us >= 0;
      if (ok) b.compile_us = std::stod(cells[2], &used), ok = used == cells[2].size() && b.compile_us >= 0;
    } catch (const std::exception&) {
      ok = false;
    }
    if (!ok)
      return error(path + " line " + std::to_string(n) + ": expected tag, eager_us, compile_us, note separated by tabs; "
                   "measure again with `autokernel kernelbench --baselines CONFIG`");
    b.tag = cells[0];
    b.note = cells[3];
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace ak
