// autokernel profile -- CMD ARGS... and autokernel plan profile.json: where a program's GPU time
// goes, and which kernels are worth autokernel's effort by Amdahl's law.
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <map>
#include <fstream>

#include <cupti.h>
#include <nlohmann/json.hpp>

#include "common/atomic_write.hpp"
#include "common/parse_number.hpp"
#include "common/text_escape.hpp"
#include "config/config.hpp"
#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/commands/foreground_command.hpp"
#include "daemon/kernelbench/problem_analysis.hpp"
#include "daemon/profile/amdahl_plan.hpp"
#include "daemon/profile/profile_data.hpp"
#include "daemon/profile/user_type_offer.hpp"
#include "harness/gpu/cupti_library.hpp"

namespace ak {
const std::map<std::string, std::string>& embedded_python();
namespace fs = std::filesystem;
namespace {

/// libautokernel_inject.so: $AUTOKERNEL_INJECTION, beside this binary, or in ../lib.
std::string injection_library() {
  if (const char* p = std::getenv("AUTOKERNEL_INJECTION")) return p;
  fs::path self = fs::read_symlink("/proc/self/exe").parent_path();
  for (fs::path p : {self / "libautokernel_inject.so", self / ".." / "lib" / "libautokernel_inject.so"})
    if (fs::exists(p)) return fs::canonical(p).string();
  return "";
}

/// Writes the module hook (daemon/profile/module_hook/sitecustomize.py) into `dir`.
Status write_module_hook(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return error("cannot create " + dir + ": " + ec.message());
  return write_file_atomic(dir + "/sitecustomize.py", embedded_python().at("daemon/profile/module_hook/sitecustomize.py"));
}

/// Runs the command with the injection; its output and exit status are its own. With a hook
/// folder, Python finds the module hook there first (PYTHONPATH) and runs it at start.
int run_profiled(const std::vector<std::string>& cmd, const std::string& records, const std::string& hook_dir) {
  std::vector<std::pair<std::string, std::string>> env{{"CUDA_INJECTION64_PATH", injection_library()},
                                                       {"AUTOKERNEL_PROFILE_OUT", records}};
  if (std::string cupti = loaded_cupti_library(); !cupti.empty()) env.push_back({"NVTX_INJECTION64_PATH", cupti});
  if (!hook_dir.empty()) env.push_back({"PYTHONPATH", hook_dir});
  return run_foreground(cmd, env, "profile");
}

}  // namespace

int profile_command(const Args& args) {
  std::string out = "profile.json", warmup = "0", top = "15", from_records;
  std::vector<std::string> cmd;
  bool keep = false, modules = false;
  ArgParser p("autokernel profile [--out profile.json] [--warmup-s N] [--modules] -- CMD ARGS...",
              "Runs CMD with autokernel's CUPTI injection library and records every GPU kernel it runs\n"
              "(and the NVTX ranges around them, e.g. PyTorch's emit_nvtx(record_shapes=True)). Writes\n"
              "the kernels ranked by GPU time, each classified as one of autokernel's types or 'other',\n"
              "to --out, and prints the top. Works on any CUDA program. CMD's output and exit code pass\n"
              "through; a profile that cannot be made exits 1 after a successful CMD.");
  p.option("out", "FILE", "where to write the profile (default profile.json)", &out)
      .option("warmup-s", "N", "leave out kernels of the first N seconds (default 0)", &warmup)
      .option("top", "N", "rows to print (default 15)", &top)
      .flag("modules", "PyTorch programs: add up each module's kernels (RMSNorm, LayerNorm, MLP, the rotary helper)\n"
                       "into one candidate, through an NVTX range around every nn.Module forward (no change to CMD)", &modules)
      .flag("keep-records", "keep the raw records (OUT.records.jsonl) to rebuild the profile later", &keep)
      .option("from-records", "FILE", "build the profile from records kept earlier instead of running CMD", &from_records)
      .rest("CMD ARGS...", "the program to profile", &cmd);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  // Checked before CMD runs: a profile of minutes is not lost to a typo in how it is printed.
  const double warmup_s = parse_decimal(warmup).value_or(-1);
  if (warmup_s < 0)
    return std::fprintf(stderr, "autokernel profile: --warmup-s %s: expected a number of seconds, 0 or more\n",
                        terminal_safe(warmup).c_str()), kExitUsage;
  const long long rows = parse_integer(top).value_or(0);
  if (rows < 1)
    return std::fprintf(stderr, "autokernel profile: --top %s: expected a number of kernels, at least 1\n", terminal_safe(top).c_str()),
           kExitUsage;
  if (!from_records.empty()) {
    auto raw = read_records(from_records);
    Result<Profile> profile = raw ? build_profile(*raw, warmup_s) : Result<Profile>(raw.error());
    if (!profile) return std::fprintf(stderr, "autokernel profile: %s\n", profile.error().message.c_str()), kExitFailure;
    if (auto s = write_file_atomic(out, nlohmann::json(*profile).dump(2) + "\n"); !s)
      return std::fprintf(stderr, "autokernel profile: %s\n", s.error().message.c_str()), kExitFailure;
    std::printf("%s: %s", out.c_str(), profile_table(*profile, size_t(rows)).c_str());
    return kExitOk;
  }
  if (cmd.empty()) return std::fprintf(stderr, "autokernel profile: give the program after --: autokernel profile -- python3 model.py\n"), kExitUsage;
  if (injection_library().empty())
    return std::fprintf(stderr, "autokernel profile: libautokernel_inject.so was not found beside the binary or in ../lib "
                                "(set AUTOKERNEL_INJECTION to its path)\n"), kExitUsage;
  const std::string records = out + ".records.jsonl";
  const std::string hook_dir = modules ? out + ".module-hook" : "";
  if (modules)
    if (auto s = write_module_hook(hook_dir); !s)
      return std::fprintf(stderr, "autokernel profile: --modules: %s\n", s.error().message.c_str()), kExitFailure;
  auto t0 = std::chrono::steady_clock::now();
  int rc = run_profiled(cmd, records, hook_dir);
  std::error_code ec;
  if (modules) fs::remove_all(hook_dir, ec);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto raw = read_records(records);
  Result<Profile> profile = raw ? build_profile(*raw, warmup_s) : Result<Profile>(raw.error());
  if (!profile) {
    std::fprintf(stderr, "autokernel profile: %s\n", profile.error().message.c_str());
    return rc != 0 ? rc : kExitFailure;
  }
  profile->command = cmd;
  profile->wall_seconds = wall;
  profile->exit_code = rc;
  if (auto s = write_file_atomic(out, nlohmann::json(*profile).dump(2) + "\n"); !s) {
    std::fprintf(stderr, "autokernel profile: %s\n", s.error().message.c_str());
    return rc != 0 ? rc : kExitFailure;
  }
  // The records stay beside the profile only when asked (--keep-records): they are large.
  if (!keep) std::remove(records.c_str());
  std::fprintf(stderr, "\nautokernel profile: %s (%.1f s wall)\n%s", out.c_str(), wall,
               profile_table(*profile, size_t(rows)).c_str());
  return rc;
}

namespace {

/// The folder of the user types as a config at `config` names it: relative to the config's folder.
std::string spec_dir_for(const std::string& dir, const std::string& config) {
  if (config.empty()) return dir;
  std::error_code ec;
  fs::path rel = fs::relative(fs::absolute(dir), fs::absolute(config).parent_path(), ec);
  return ec || rel.empty() ? fs::absolute(dir).string() : rel.generic_string();
}

}  // namespace

int plan_command(const Args& args) {
  std::string file, top = "10", target = "2.0", write, user_types, python = "python3";
  ArgParser p("autokernel plan profile.json [--top N] [--target S] [--write CONFIG] [--user-types DIR] [--python PATH]",
              "The Amdahl table of a profile: for each of the top kernels its share f of the GPU time,\n"
              "the speedup s it could reach (--target for autokernel's types, 1 for others) and the whole\n"
              "program's speedup 1/((1-f)+f/s); the total if all were done; and the [[kernel]] entries to\n"
              "paste, or to append to a config with --write. A kernel whose shape is unknown is written\n"
              "commented out, saying what to fill in.");
  p.positional("profile.json", "a profile from autokernel profile", &file)
      .option("top", "N", "kernels to consider (default 10)", &top)
      .option("target", "S", "the speedup each supported kernel is assumed to reach (default 2.0)", &target)
      .option("write", "CONFIG", "append the [[kernel]] entries to this config and check it", &write)
      .option("user-types", "DIR", "offer the top modules of no type (profile --modules) as user types: write\n"
                                   "DIR/<name>.py (a reference) and DIR/<name>.toml (its spec) for each module that\n"
                                   "can be offered, a [[kernel]] entry for it, and the reason for each that cannot", &user_types)
      .option("python", "PATH", "the Python with torch that reads a layer's reference (a convolution, a norm with\n"
                                "weights) as `autokernel kernelbench` reads a problem (default python3)", &python);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  auto profile = read_profile(file);
  if (!profile) return std::fprintf(stderr, "autokernel plan: %s\n", profile.error().message.c_str()), kExitUsage;
  const double s = parse_decimal(target).value_or(0);
  if (s < 1) return std::fprintf(stderr, "autokernel plan: --target %s: expected a speedup of at least 1\n", target.c_str()), kExitUsage;
  const long long rows = parse_integer(top).value_or(0);
  if (rows < 1) return std::fprintf(stderr, "autokernel plan: --top %s: expected a number of kernels, at least 1\n", top.c_str()), kExitUsage;
  Plan plan = make_plan(*profile, size_t(rows), s);
  std::string toml = plan_toml(plan, fs::path(file).filename().string());
  if (!user_types.empty()) {
    auto offers = user_type_offers(plan);
    for (const UserTypeOffer& o : offers)
      if (o.refusal.empty() && o.range.init == "args" && !python_available(python))
        return std::fprintf(stderr, "autokernel plan: --python %s: no such Python, and module %s is a layer whose spec is read by "
                                    "running its reference with torch: give --python PATH\n",
                            terminal_safe(python).c_str(), o.range.name.c_str()), kExitUsage;
    std::vector<std::string> kept;
    if (auto w = write_user_type_offers(offers, user_types, fs::path(file).filename().string(), python, kept); !w)
      return std::fprintf(stderr, "autokernel plan: %s\n", w.error().message.c_str()), kExitFailure;
    for (auto& k : kept) std::fprintf(stderr, "autokernel plan: %s exists with other text (an edit?): kept as it is\n", k.c_str());
    toml += offers.empty() ? "\n# --user-types: no module of none of autokernel's types among the top " + top +
                                 " (profile with --modules to see modules)\n"
                           : user_type_offers_toml(offers, spec_dir_for(user_types, write), s);
  }
  std::printf("%s\n%s", plan_table(plan).c_str(), write.empty() ? toml.c_str() : "");
  if (!write.empty()) {
    std::ofstream(write, std::ios::app) << "\n" << toml;
    auto cfg = load_config(write);
    if (!cfg) return std::fprintf(stderr, "autokernel plan: wrote %s, which does not check yet:\n%s\n", write.c_str(),
                                  cfg.error().message.c_str()), kExitFailure;
    std::printf("appended the [[kernel]] entries to %s; it checks: %zu kernels\n", write.c_str(), cfg->kernels.size());
  }
  return kExitOk;
}

}  // namespace ak
