// autokernel kernelbench: KernelBench problem files -> one user type spec each, and a config.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "common/atomic_write.hpp"
#include "common/file_text.hpp"
#include "common/text_escape.hpp"
#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/kernelbench/builtin_problem.hpp"
#include "daemon/kernelbench/elementwise_starter.hpp"
#include "daemon/kernelbench/problem_analysis.hpp"
#include "daemon/kernelbench/problem_baselines.hpp"
#include "daemon/kernelbench/problem_spec.hpp"

namespace ak {
namespace fs = std::filesystem;
namespace {

/// The run's name from the config's file name, in the characters [run] name takes.
std::string run_name_of(const fs::path& config) {
  std::string name;
  for (char c : config.stem().string()) name += std::isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.' ? c : '_';
  return name.empty() ? "kernelbench" : name;
}

/// Where the refusals of a call that writes `config` go: <config stem>.refused.tsv beside it.
fs::path refusals_path(const fs::path& config) { return config.parent_path() / (config.stem().string() + ".refused.tsv"); }

/// Where the built-in problems of a call that writes `config` go: <config stem>.builtin.tsv beside it.
fs::path builtin_problems_path(const fs::path& config) { return config.parent_path() / (config.stem().string() + ".builtin.tsv"); }

/// Python processes for the analysis: one per two cores (each runs PyTorch on one thread), at most 8.
unsigned analysis_processes() { return std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u); }

/// A file to write: its path and its text.
using PendingFile = std::pair<fs::path, std::string>;

/// The spec and the copied problem of an accepted analysis, to write into `types_dir`, and the
/// first kernel file where `starter` has one (its spec then names it); the spec is the last.
Result<std::vector<PendingFile>> user_type_files(const nlohmann::json& analysis, const std::string& problem,
                                                 const std::string& name, const fs::path& types_dir,
                                                 const std::optional<std::string>& starter) {
  const std::string reference = name + ".py";
  auto source = read_file_text(problem);
  if (!source) return source.error();
  std::vector<PendingFile> files{{types_dir / reference, *source}};
  if (starter) files.emplace_back(types_dir / (name + ".cu"), *starter);
  files.emplace_back(types_dir / (name + ".toml"),
                     kernelbench_spec_text(analysis, name, reference, problem, starter ? name + ".cu" : ""));
  return files;
}

/// The files among `files` that exist with other text: what writing them would overwrite.
std::vector<std::string> overwritten(const std::vector<PendingFile>& files) {
  std::vector<std::string> out;
  for (auto& [path, text] : files) {
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    auto old = read_file_text(path.string());
    if (!old || *old != text) out.push_back(path.string());
  }
  return out;
}

/// `kernelbench --baselines CONFIG`: the PyTorch times of the problems CONFIG runs as built-in
/// types, from the links its import wrote, into <CONFIG stem>.baselines.tsv.
int baselines_command(const std::string& config_arg, bool with_compile) {
  const fs::path config = fs::absolute(config_arg);
  auto problems = read_builtin_problems(builtin_problems_path(config).string());
  if (!problems)
    return std::fprintf(stderr, "autokernel kernelbench --baselines: %s (import the problems with `autokernel kernelbench "
                                "... --out %s` first)\n", problems.error().message.c_str(), terminal_safe(config.string()).c_str()),
           kExitUsage;
  const fs::path out = config.parent_path() / (config.stem().string() + ".baselines.tsv");
  Status written = ok();
  // Written after each problem: a call stopped for its time keeps the problems it timed.
  auto keep = [&](const std::vector<ProblemBaseline>& so_far) {
    if (written) written = write_file_atomic(out.string(), problem_baselines_text(so_far));
  };
  auto measured = measure_problem_baselines(*problems, config.parent_path().string(), 0, 20, with_compile, keep);
  if (!measured) return std::fprintf(stderr, "autokernel kernelbench --baselines: %s\n", measured.error().message.c_str()), kExitUsage;
  if (!written || !(written = write_file_atomic(out.string(), problem_baselines_text(*measured))))
    return std::fprintf(stderr, "autokernel kernelbench --baselines: %s\n", written.error().message.c_str()), kExitFailure;
  int missing = 0;
  for (auto& b : *measured) {
    std::printf("%s: eager %.2f us, torch.compile %.2f us%s%s\n", terminal_safe(b.tag).c_str(), b.eager_us, b.compile_us,
                b.note.empty() ? "" : ": ", terminal_safe(b.note).c_str());
    missing += b.eager_us <= 0;
  }
  std::printf("%zu problem%s timed; wrote %s\n", measured->size(), measured->size() == 1 ? "" : "s", out.c_str());
  return missing ? kExitFailure : kExitOk;
}

}  // namespace

int kernelbench_command(const Args& args) {
  std::vector<std::string> files;
  std::string out, types, python = "python3", baselines;
  bool force = false, offline = false, starters = false, no_compile = false;
  ArgParser p("autokernel kernelbench FILE.py... --out CONFIG [--types DIR] [--python PATH] [--force] [--starters|--offline]\n"
              "       autokernel kernelbench --baselines CONFIG [--no-compile]",
              "Reads problems in KernelBench's format (class Model, get_inputs, get_init_inputs, module-level\n"
              "size globals) by running them with PyTorch on its meta device (no GPU, no memory), and writes\n"
              "for each one it accepts a user type: a spec (DIR/<name>.toml, DIR default: `types` beside\n"
              "CONFIG) and a copy of the problem beside it. It refuses, with the reason, what cannot be\n"
              "judged: a forward that draws random numbers (dropout in training mode), tensors other than\n"
              "float and int64, inputs that are not tensors, problems that fail to run. Writes CONFIG with one\n"
              "[[kernel]] per accepted problem, and the refusals beside it (<CONFIG stem>.refused.tsv), which\n"
              "`report` counts as problems not solved. The analysis needs a Python with PyTorch. An existing\n"
              "CONFIG, or a spec or copy in DIR with other text, is not overwritten without --force. Exits 0\n"
              "when it accepted a problem, 2 when it accepted none or would overwrite.\n"
              "A problem that computes a built-in type (both references run on the CPU and compared) gets that\n"
              "type's [[kernel]] at its shape, linked to it in <CONFIG stem>.builtin.tsv; a chain of elementwise\n"
              "ops gets, with --starters or --offline, a first kernel file (DIR/<name>.cu) written from its ops:\n"
              "both run without an LLM.\n"
              "--baselines CONFIG times, on GPU 0, the modules of the problems CONFIG runs as built-in types (eager\n"
              "and torch.compile, as a user type's baseline) into <CONFIG stem>.baselines.tsv, which `report` reads.\n"
              "See docs/user-types.md (Importing KernelBench problems).");
  p.positionals("FILE.py", "KernelBench problem files", &files, false)
      .option("out", "CONFIG", "the config to write", &out)
      .option("types", "DIR", "where the specs go (default: `types` beside CONFIG)", &types)
      .option("python", "PATH", "the Python 3 with PyTorch that runs the analysis (default python3)", &python)
      .flag("force", "overwrite CONFIG and the specs and problem copies in DIR where they exist", &force)
      .flag("starters", "write a first kernel file (DIR/<name>.cu) for each problem whose forward is a chain of\n"
                        "elementwise ops, named by its spec's `starter`", &starters)
      .flag("offline", "for a run without an LLM: --starters, and leave out of CONFIG the problems that would need an\n"
                       "LLM (no built-in type, no first file): they go to the refusals, counted as not solved", &offline)
      .option("baselines", "CONFIG", "time the modules of CONFIG's built-in problems (needs a GPU and torch)", &baselines)
      .flag("no-compile", "with --baselines: eager alone, no torch.compile", &no_compile);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (!baselines.empty()) {
    if (!files.empty() || !out.empty())
      return std::fprintf(stderr, "autokernel kernelbench: --baselines CONFIG takes no problem files and no --out\n"), kExitUsage;
    return baselines_command(baselines, !no_compile);
  }
  if (files.empty())
    return std::fprintf(stderr, "autokernel kernelbench: give the problem files (FILE.py...), or --baselines CONFIG\n"),
           kExitUsage;
  if (out.empty())
    return std::fprintf(stderr, "autokernel kernelbench: give --out CONFIG (the config to write)\n"), kExitUsage;
  if (!python_available(python))
    return std::fprintf(stderr, "autokernel kernelbench: %s not found: the analysis of a problem needs a Python 3 "
                                "with PyTorch; install python3 and torch or give --python PATH\n", python.c_str()), kExitUsage;
  const fs::path config = fs::absolute(out);
  if (std::error_code ec; fs::exists(config, ec) && (!force || fs::is_directory(config, ec)))
    return std::fprintf(stderr, "autokernel kernelbench: --out %s exists%s\n", terminal_safe(config.string()).c_str(),
                        fs::is_directory(config, ec) ? " and is a folder: give the path of a config file to write"
                                                     : ": give --force to overwrite it, or another --out"), kExitUsage;
  const fs::path types_dir = types.empty() ? config.parent_path() / "types" : fs::absolute(types);
  for (const fs::path& dir : {types_dir, config.parent_path()}) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      return std::fprintf(stderr, "autokernel kernelbench: cannot create %s: %s\n", dir.c_str(), ec.message().c_str()),
             kExitUsage;
  }

  std::vector<std::string> spec_paths;
  std::vector<BuiltinProblem> builtins;
  int without_starter = 0;
  std::vector<PendingFile> pending;   // written only once every problem is read and nothing would be overwritten
  std::map<std::string, std::string> taken;   // type name -> the file that has it
  std::vector<std::pair<std::string, std::string>> refusals;   // file, reason
  auto refuse = [&](const std::string& file, const std::string& why) {
    std::printf("%s: refused: %s\n", terminal_safe(file).c_str(), terminal_safe(why).c_str());
    refusals.emplace_back(file, why);
  };
  std::vector<std::string> readable;
  for (auto& file : files)
    if (std::error_code ec; fs::is_regular_file(file, ec)) readable.push_back(file);
  auto analyses = readable.empty() ? Result<std::vector<Result<nlohmann::json>>>(std::vector<Result<nlohmann::json>>{})
                                   : analyse_problems_in_parallel(python, readable, analysis_processes());
  if (!analyses) {
    std::fprintf(stderr, "autokernel kernelbench: %s\n", analyses.error().message.c_str());
    return kExitUsage;
  }
  size_t next = 0;
  for (auto& file : files) {
    const std::string shown = terminal_safe(file);
    if (next == readable.size() || readable[next] != file) {
      refuse(file, "no such file");
      continue;
    }
    auto& analysis = (*analyses)[next++];
    if (!analysis) {
      refuse(file, analysis.error().message);
      continue;
    }
    if (!analysis->value("accepted", false)) {
      refuse(file, analysis->value("refused", std::string("?")));
      continue;
    }
    const std::string name = kernelbench_type_name(file);
    if (auto [it, fresh] = taken.emplace(name, file); !fresh) {
      refuse(file, "its type name " + name + " is taken by " + it->second + " (rename one file)");
      continue;
    }
    std::error_code ec;
    const fs::path spec = types_dir / (name + ".toml");
    const fs::path relative = fs::relative(spec, config.parent_path(), ec);
    const std::string spec_path = (ec || relative.empty() ? spec : relative).generic_string();
    auto builtin = builtin_problem_of(*analysis, file, spec_path);
    std::optional<std::string> starter;
    std::string why_no_starter;
    if (!builtin && (starters || offline)) {
      if (auto text = elementwise_starter_text(*analysis, name)) starter = *text;
      else why_no_starter = text.error().message;
    }
    auto written = user_type_files(*analysis, file, name, types_dir, starter);
    if (!written) {
      std::fprintf(stderr, "autokernel kernelbench: %s\n", written.error().message.c_str());
      return kExitFailure;
    }
    pending.insert(pending.end(), written->begin(), written->end());
    std::string how;
    if (builtin) {
      builtins.push_back(*builtin);
      std::string shape;
      for (long long v : builtin->shape) shape += (shape.empty() ? "" : ", ") + std::to_string(v);
      how = "; runs as the built-in " + builtin->type + " [" + shape + "] " + builtin->dtype + " (" + builtin->mapping + ")";
    } else if (starter) {
      spec_paths.push_back(spec_path);
      how = "; first file " + name + ".cu written from its elementwise ops";
    } else if (offline) {
      // A match the registry does not take (matmul before its Linear layout) is said, not hidden.
      const std::string match = analysis->value("builtin", nlohmann::json()).is_object() ? builtin.error().message + "; " : "";
      refuse(file, "needs an LLM: no built-in type that runs it computes it and no first file can be written from its ops (" +
                   match + why_no_starter + ")");
      continue;
    } else {
      spec_paths.push_back(spec_path);
      how = "; needs an LLM for its first file";
    }
    std::printf("%s: accepted (%s) as %s -> %s%s\n", shown.c_str(), analysis->value("kind", std::string()).c_str(),
                name.c_str(), terminal_safe(spec.string()).c_str(), terminal_safe(how).c_str());
    if (builtin) continue;
    if (!starter) ++without_starter;
  }
  assign_builtin_tags(builtins);
  const int refused = int(refusals.size());
  if (spec_paths.empty() && builtins.empty()) {
    std::fprintf(stderr, "autokernel kernelbench: no problem accepted (%d refused): %s not written\n", refused,
                 config.c_str());
    return kExitUsage;
  }
  if (const auto clash = overwritten(pending); !clash.empty() && !force) {
    std::fprintf(stderr, "autokernel kernelbench: %zu file%s in %s would be overwritten (an edit?), first %s: give --force to "
                         "overwrite, or --types DIR elsewhere; nothing written\n", clash.size(), clash.size() == 1 ? "" : "s",
                 terminal_safe(types_dir.string()).c_str(), terminal_safe(clash.front()).c_str());
    return kExitUsage;
  }
  for (auto& [path, text] : pending)
    if (auto s = write_file_atomic(path.string(), text); !s) {
      std::fprintf(stderr, "autokernel kernelbench: %s\n", s.error().message.c_str());
      return kExitFailure;
    }
  const fs::path refused_path = refusals_path(config);
  if (auto s = write_file_atomic(refused_path.string(), kernelbench_refusals_text(refusals)); !s) {
    std::fprintf(stderr, "autokernel kernelbench: %s\n", s.error().message.c_str());
    return kExitFailure;
  }
  const fs::path builtin_path = builtin_problems_path(config);
  if (auto s = write_file_atomic(builtin_path.string(), builtin_problems_text(builtins)); !s) {
    std::fprintf(stderr, "autokernel kernelbench: %s\n", s.error().message.c_str());
    return kExitFailure;
  }
  if (auto s = write_file_atomic(config.string(), kernelbench_config_text(run_name_of(config), spec_paths, builtins,
                                                                           without_starter == 0));
      !s) {
    std::fprintf(stderr, "autokernel kernelbench: %s\n", s.error().message.c_str());
    return kExitFailure;
  }
  std::printf("%zu accepted, %d refused%s (%zu as built-in types, %zu with a first file written from elementwise ops, "
              "%d needing an LLM); wrote %s, %s and %s\n",
              spec_paths.size() + builtins.size(), refused, offline ? " or left out for needing an LLM" : "",
              builtins.size(), spec_paths.size() - size_t(without_starter), without_starter, config.c_str(),
              refused_path.c_str(), builtin_path.c_str());
  return kExitOk;
}

}  // namespace ak
