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

/// Writes the spec and the copied problem for an accepted analysis; returns the spec's path.
Result<fs::path> write_user_type(const nlohmann::json& analysis, const std::string& problem, const std::string& name,
                                 const fs::path& types_dir) {
  const std::string reference = name + ".py";
  auto source = read_text(problem);
  if (!source) return source.error();
  if (auto s = write_file_atomic((types_dir / reference).string(), *source); !s) return s.error();
  const fs::path spec = types_dir / (name + ".toml");
  if (auto s = write_file_atomic(spec.string(), kernelbench_spec_text(analysis, name, reference, problem)); !s)
    return s.error();
  return spec;
}

}  // namespace

int kernelbench_command(const Args& args) {
  std::vector<std::string> files;
  std::string out, types, python = "python3";
  ArgParser p("autokernel kernelbench FILE.py... --out CONFIG [--types DIR] [--python PATH]",
              "Reads problems in KernelBench's format (class Model, get_inputs, get_init_inputs, module-level\n"
              "size globals) without running them, and writes for each one it accepts a user type: a spec\n"
              "(DIR/<name>.toml, DIR default: `types` beside CONFIG) and a copy of the problem beside it. It\n"
              "accepts elementwise, row-wise (over the last dimension), single-axis reduction and GEMM-with-\n"
              "epilogue problems and refuses the rest with the reason and line (convolutions, pooling, scans,\n"
              "attention, ...). Writes CONFIG with one [[kernel]] per accepted problem. The analysis needs a\n"
              "Python 3 but no PyTorch. Exits 0 when it accepted a problem, 2 when it accepted none.\n"
              "See docs/user-types.md (Importing KernelBench problems).");
  p.positionals("FILE.py", "KernelBench problem files", &files)
      .option("out", "CONFIG", "the config to write", &out)
      .option("types", "DIR", "where the specs go (default: `types` beside CONFIG)", &types)
      .option("python", "PATH", "the Python 3 that runs the analysis (default python3; PyTorch not needed)", &python);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (out.empty())
    return std::fprintf(stderr, "autokernel kernelbench: give --out CONFIG (the config to write)\n"), kExitUsage;
  if (!python_available(python))
    return std::fprintf(stderr, "autokernel kernelbench: %s not found: the analysis of a problem needs a Python 3 "
                                "(no PyTorch); install python3 or give --python PATH\n", python.c_str()), kExitUsage;
  const fs::path config = fs::absolute(out);
  const fs::path types_dir = types.empty() ? config.parent_path() / "types" : fs::absolute(types);
  for (const fs::path& dir : {types_dir, config.parent_path()}) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
      return std::fprintf(stderr, "autokernel kernelbench: cannot create %s: %s\n", dir.c_str(), ec.message().c_str()),
             kExitUsage;
  }

  std::vector<std::string> spec_paths;
  std::map<std::string, std::string> taken;   // type name -> the file that has it
  std::map<std::string, int> refusals;
  for (auto& file : files) {
    const std::string shown = terminal_safe(file);
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) {
      std::printf("%s: refused: no such file\n", shown.c_str());
      ++refusals["no such file"];
      continue;
    }
    auto analysis = analyse_problem(python, file);
    if (!analysis) {
      std::printf("%s: refused: %s\n", shown.c_str(), terminal_safe(analysis.error().message).c_str());
      ++refusals["the analyser failed"];
      continue;
    }
    if (!analysis->value("accepted", false)) {
      std::printf("%s: refused: %s\n", shown.c_str(), terminal_safe(analysis->value("refused", std::string("?"))).c_str());
      ++refusals["refused"];
      continue;
    }
    const std::string name = kernelbench_type_name(file);
    if (auto [it, fresh] = taken.emplace(name, file); !fresh) {
      std::printf("%s: refused: its type name %s is taken by %s (rename one file)\n", shown.c_str(), name.c_str(),
                  terminal_safe(it->second).c_str());
      ++refusals["name taken"];
      continue;
    }
    auto spec = write_user_type(*analysis, file, name, types_dir);
    if (!spec) {
      std::fprintf(stderr, "autokernel kernelbench: %s\n", spec.error().message.c_str());
      return kExitFailure;
    }
    const fs::path relative = fs::relative(*spec, config.parent_path(), ec);
    spec_paths.push_back((ec || relative.empty() ? *spec : relative).generic_string());
    std::printf("%s: accepted (%s) as %s -> %s\n", shown.c_str(), analysis->value("kind", std::string()).c_str(),
                name.c_str(), terminal_safe(spec->string()).c_str());
  }
  int refused = 0;
  for (auto& [why, n] : refusals) refused += n;
  if (spec_paths.empty()) {
    std::fprintf(stderr, "autokernel kernelbench: no problem accepted (%d refused): %s not written\n", refused,
                 config.c_str());
    return kExitUsage;
  }
  if (auto s = write_file_atomic(config.string(), kernelbench_config_text(run_name_of(config), spec_paths)); !s) {
    std::fprintf(stderr, "autokernel kernelbench: %s\n", s.error().message.c_str());
    return kExitFailure;
  }
  std::printf("%zu accepted, %d refused; wrote %s\n", spec_paths.size(), refused, config.c_str());
  return kExitOk;
}

}  // namespace ak
