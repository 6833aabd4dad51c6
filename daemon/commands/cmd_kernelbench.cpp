// autokernel kernelbench: KernelBench problem files -> one user type spec each, and a config.
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "common/text_escape.hpp"
#include "daemon/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/kernelbench/problem_analysis.hpp"
#include "daemon/kernelbench/problem_spec.hpp"
#include "daemon/loop/run_directory.hpp"

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

/// A file to write: its path and its text.
using PendingFile = std::pair<fs::path, std::string>;

/// The spec and the copied problem of an accepted analysis, to write into `types_dir`.
Result<std::vector<PendingFile>> user_type_files(const nlohmann::json& analysis, const std::string& problem,
                                                 const std::string& name, const fs::path& types_dir) {
  const std::string reference = name + ".py";
  auto source = read_text(problem);
  if (!source) return source.error();
  return std::vector<PendingFile>{{types_dir / reference, *source},
                                  {types_dir / (name + ".toml"), kernelbench_spec_text(analysis, name, reference, problem)}};
}

/// The files among `files` that exist with other text: what writing them would overwrite.
std::vector<std::string> overwritten(const std::vector<PendingFile>& files) {
  std::vector<std::string> out;
  for (auto& [path, text] : files) {
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    auto old = read_text(path.string());
    if (!old || *old != text) out.push_back(path.string());
  }
  return out;
}

}  // namespace

int kernelbench_command(const Args& args) {
  std::vector<std::string> files;
  std::string out, types, python = "python3";
  bool force = false;
  ArgParser p("autokernel kernelbench FILE.py... --out CONFIG [--types DIR] [--python PATH] [--force]",
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
              "See docs/user-types.md (Importing KernelBench problems).");
  p.positionals("FILE.py", "KernelBench problem files", &files)
      .option("out", "CONFIG", "the config to write", &out)
      .option("types", "DIR", "where the specs go (default: `types` beside CONFIG)", &types)
      .option("python", "PATH", "the Python 3 with PyTorch that runs the analysis (default python3)", &python)
      .flag("force", "overwrite CONFIG and the specs and problem copies in DIR where they exist", &force);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
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
                                   : analyse_problems(python, readable);
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
    auto written = user_type_files(*analysis, file, name, types_dir);
    if (!written) {
      std::fprintf(stderr, "autokernel kernelbench: %s\n", written.error().message.c_str());
      return kExitFailure;
    }
    const fs::path spec = written->back().first;
    pending.insert(pending.end(), written->begin(), written->end());
    std::error_code ec;
    const fs::path relative = fs::relative(spec, config.parent_path(), ec);
    spec_paths.push_back((ec || relative.empty() ? spec : relative).generic_string());
    std::printf("%s: accepted (%s) as %s -> %s\n", shown.c_str(), analysis->value("kind", std::string()).c_str(),
                name.c_str(), terminal_safe(spec.string()).c_str());
  }
  const int refused = int(refusals.size());
  if (spec_paths.empty()) {
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
  if (auto s = write_file_atomic(config.string(), kernelbench_config_text(run_name_of(config), spec_paths)); !s) {
    std::fprintf(stderr, "autokernel kernelbench: %s\n", s.error().message.c_str());
    return kExitFailure;
  }
  std::printf("%zu accepted, %d refused; wrote %s and %s\n", spec_paths.size(), refused, config.c_str(),
              refused_path.c_str());
  return kExitOk;
}

}  // namespace ak
