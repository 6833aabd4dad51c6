#include "daemon/loop/run_preflight.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/run_folder/kernel_progress.hpp"
#include "kernels_cuda/registry.hpp"

namespace ak {
namespace {

namespace fs = std::filesystem;

/// Bytes beyond which an operand is refused: no GPU holds a tensor of a terabyte.
constexpr long long kMaxOperandBytes = 1LL << 40;
/// Elements beyond which a shape's sizes are not multiplied: every product of them stays in a long long.
constexpr long long kMaxShapeElements = 1LL << 62;

std::string at_kernel(const Config& cfg, const KernelEntry& k) { return cfg.path + ":" + std::to_string(k.line) + ": [[kernel]] "; }

/// The run folder, or the nearest folder above it that exists (where it would be made), must be a
/// folder this user can write in.
std::optional<std::string> workdir_problem(const Config& cfg) {
  const fs::path run = cfg.run_dir();
  const std::string where = cfg.path + ": [run] workdir = \"" + cfg.run.workdir + "\", name = \"" + cfg.run.name + "\": ";
  fs::path p = run;
  std::error_code ec;
  while (!fs::exists(p, ec) && !ec && p.has_parent_path() && p.parent_path() != p) p = p.parent_path();
  if (ec) return where + "cannot look at " + p.string() + ": " + ec.message();
  if (!fs::is_directory(p, ec))
    return where + (p == run ? "the run folder " + run.string() + " is a file, not a folder"
                             : "the run folder " + run.string() + " cannot be made: " + p.string() + " is a file, not a folder") +
           ": give another workdir or name";
  if (::access(p.c_str(), W_OK | X_OK) != 0)
    return where + "cannot write in " + p.string() + " (" + std::strerror(errno) + "), where the run folder " +
           (p == run ? "is" : "would be made") + ": give a workdir this user can write in";
  return std::nullopt;
}

/// Why no GPU can run `k`'s shape: its sizes multiply past a long long, an operand larger than any
/// GPU's memory, or a value the type's contract excludes.
std::optional<std::string> shape_problem(const Config& cfg, const KernelEntry& k) {
  const KernelSpec* spec = find_spec(k.type);
  const auto dtype = parse_dtype(k.dtype);
  if (!spec || !dtype || spec->shape_names.size() != k.shape.size()) return std::nullopt;   // an older contract's shape
  const std::string where = at_kernel(cfg, k) + k.type + " shape " + shape_str(k.shape) + ": ";
  long long elements = 1;
  for (int64_t d : k.shape)
    if (__builtin_mul_overflow(elements, d, &elements) || elements > kMaxShapeElements)
      return where + "its sizes multiply past 2^62: no GPU holds such a problem; give a smaller shape";
  for (const ArgSpec& a : spec->args) {
    if (!a.is_buffer() || !a.numel) continue;
    long long bytes = 0;
    const int64_t n = a.numel(k.shape);
    const bool overflow = n < 0 || __builtin_mul_overflow(n, (long long)elem_size(a.elem, *dtype), &bytes);
    if (overflow || bytes > kMaxOperandBytes)
      return where + "its operand " + a.name + " would take " + (overflow ? "more than 8 EiB" : std::to_string(bytes >> 30) + " GiB") +
             ": no GPU holds it; give a smaller shape";
  }
  if (spec->shape_error)
    if (std::string why = spec->shape_error(k.shape); !why.empty()) return where + why;
  return std::nullopt;
}

/// Two entries of one type, shape and dtype: one kernel, whose share of the program's time would
/// count twice.
std::vector<std::string> duplicates(const Config& cfg) {
  std::vector<std::string> out;
  std::map<std::string, const KernelEntry*> seen;
  for (const KernelEntry& k : cfg.kernels) {
    const std::string key = k.type + " " + shape_str(k.shape) + " " + k.dtype;
    auto [it, fresh] = seen.emplace(key, &k);
    if (!fresh)
      out.push_back(at_kernel(cfg, k) + key + " is the kernel of line " + std::to_string(it->second->line) +
                    " again: keep one entry (with the two weights added up)");
  }
  return out;
}

}  // namespace

Status check_before_gpu(const Config& cfg) {
  std::vector<std::string> problems;
  if (auto why = first_file_missing(cfg)) problems.push_back(*why);
  if (auto why = workdir_problem(cfg)) problems.push_back(*why);
  for (const KernelEntry& k : cfg.kernels)
    if (auto why = shape_problem(cfg, k)) problems.push_back(*why);
  for (auto& why : duplicates(cfg)) problems.push_back(why);
  if (problems.empty()) return ok();
  std::string all;
  for (auto& p : problems) all += (all.empty() ? "" : "\n") + p;
  return error(all);
}

}  // namespace ak
