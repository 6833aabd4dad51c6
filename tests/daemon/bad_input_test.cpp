// Every command answers a careless user's input with a message that names the input and exit 1
// or 2, never a signal: the real binary, run as a user runs it, on a table of bad inputs.
//
// Each case gets a folder holding good inputs (kBase: a config, a run folder, a profile, an
// exported package) and changes some of them; its command runs in that folder. A new case is
// one row of kCases.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "daemon/run_folder/results_table.hpp"
#include "tests/kernels_cuda/user_type_specs.hpp"
#include "tests/support.hpp"

using namespace ak;
using namespace ak::test;
namespace fs = std::filesystem;

namespace {

/// An API key, as a user might paste it into the config where a variable's name belongs.
const std::string kPastedKey = "sk-ant-api03-Zx81kQ2mP0vL9rT4yW7uB3nC6dE5fG";

/// Stands for a folder where a file's text would be: the path is made a folder.
const std::string kFolder = "\x01" "folder";
/// Stands for taking every permission off the path (the case then runs as an unprivileged user).
const std::string kNoAccess = "\x01" "no access";
/// Stands for removing the path.
const std::string kAbsent = "\x01" "absent";

/// One bad input: what it is, the files it changes, the command, what its message must say.
struct BadInput {
  const char* name;
  std::vector<std::pair<std::string, std::string>> files;   ///< path in the case's folder -> text, kFolder, kNoAccess or kAbsent
  std::string command;     ///< a shell line; {ak} is the binary
  std::string says;        ///< a part of the output that names the input
  int exit_code = 2;
};

std::string row(long long n, const std::string& description = "edit", bool kept = false) {
  ResultRow r{n, "rmsnorm", "rmsnorm", 2000, 100 - double(n), 0.8, 1.2, "PASS", 256, kept, kept ? "abc" : "", 10, 3.5, description};
  return format_row(r) + "\n";
}

const std::string kConfig = "[run]\nname = \"r\"\n\n[[kernel]]\ntype = \"rmsnorm\"\nshape = [4096, 4096]\n";
const std::string kState =
    R"({"run": "r", "status": "running", "experiments": 2, "llm_tokens": 0, "llm_cost_usd": 0.0, "seconds": 7.0,
        "wall_seconds": 9.0, "amdahl_speedup": 1.1, "gpus": [{"device": 0, "model": "H100", "doing": "idle"}],
        "kernels": [{"tag": "rmsnorm", "type": "rmsnorm", "shape": "4096x4096", "dtype": "fp16", "weight": 1.0,
                     "baseline_us": 100.0, "best_us": 99.0, "speedup": 1.01, "pct_peak": 0.8, "experiments": 2,
                     "consecutive_reverts": 1, "converged": ""}]})";
const std::string kProfile =
    R"({"schema": "autokernel-profile-1", "gpu": "H100", "total_gpu_us": 1000.0,
        "kernels": [{"name": "rms_norm_kernel", "type": "rmsnorm", "bound": "memory", "calls": 10, "total_us": 600.0,
                     "mean_us": 60.0, "share": 0.6, "nvtx": "aten::rms_norm, sizes = [[4096, 4096], [4096]]"}]})";

/// The good inputs every case starts from.
std::vector<std::pair<std::string, std::string>> base_files() {
  return {{"config.toml", kConfig},
          {"r/results.tsv", results_header() + "\n" + row(1, "baseline", true) + row(2)},
          {"r/state.json", kState},
          {"r/kernels/rmsnorm.cu", "// a kept file\n"},
          {"profile.json", kProfile},
          {"ops/autokernel_ops/manifest.json", "{\"ops\": []}"}};
}

std::string kernel_entry(const std::string& shape, const std::string& weight = "1") {
  return "\n[[kernel]]\ntype = \"rmsnorm\"\nshape = " + shape + "\nweight = " + weight + "\n";
}

// clang-format off
const std::vector<BadInput> kCases = {
  // A config: given by its bare file name, a folder, empty, not TOML, cut short, not UTF-8, huge numbers.
  {"a config given by its bare file name, with a misspelt key", {{"bad.toml", "[run]\nnmae = \"x\"\n" + kernel_entry("[8, 8]")}},
   "{ak} config check bad.toml", "bad.toml:2: unknown key 'run.nmae'"},
  {"run from the config's folder, by its bare name, a kernel listed twice", {{"dup.toml", kConfig + "weight = 0.5\n" + kernel_entry("[4096, 4096]", "0.5")}},
   "{ak} run --config dup.toml", "dup.toml:9: [[kernel]] rmsnorm 4096x4096 fp16 is the kernel of line 4 again"},
  {"a config that is a folder", {{"c.toml", kFolder}}, "{ak} config check c.toml", "c.toml: is a directory"},
  {"a config that does not exist", {}, "{ak} config check nowhere.toml", "nowhere.toml: no such file"},
  {"an empty config", {{"c.toml", ""}}, "{ak} config check c.toml", "c.toml: no [[kernel]] entries"},
  {"a config cut short inside a string", {{"c.toml", "[[kernel]]\ntype = \"rmsn"}}, "{ak} config check c.toml", "c.toml:2: not valid TOML"},
  {"a config that is not UTF-8", {{"c.toml", "[run]\nname = \"\xff\xfe\"\n"}}, "{ak} config check c.toml", "c.toml:2: not valid TOML"},
  {"a config with a control character in a name", {{"c.toml", "[run]\nname = \"a\\u001b[2Jb\"\n" + kernel_entry("[8, 8]")}},
   "{ak} config check c.toml", "c.toml: run.name"},
  {"a config with a size past 64 bits", {{"c.toml", kernel_entry("[99999999999999999999, 2048]")}}, "{ak} config check c.toml", "c.toml:"},
  {"a config with a string where a table belongs", {{"c.toml", "run = \"x\"\n" + kernel_entry("[8, 8]")}}, "{ak} config check c.toml",
   "'run' must be a table"},
  {"a config whose path holds spaces", {{"my configs/a b.toml", "[gpu]\ndevice = \"zero\"\n" + kernel_entry("[8, 8]")}},
   "{ak} config check 'my configs/a b.toml'", "my configs/a b.toml:2: gpu.device is a string"},
  {"a config whose path holds a line feed", {{"new\nline.toml", "[gpu]\ndevice = -1\n" + kernel_entry("[8, 8]")}},
   "{ak} config check new?line.toml", "line.toml:2: gpu.device = -1"},
  // What run checks before it needs a GPU, config check checks too.
  {"a shape of 2^31 x 2^31", {{"c.toml", kernel_entry("[2147483648, 2147483648]")}}, "{ak} config check c.toml",
   "c.toml:2: [[kernel]] rmsnorm shape 2147483648x2147483648: its operand"},
  {"a matmul whose sizes multiply past 2^62", {{"c.toml", "[[kernel]]\ntype = \"matmul\"\nshape = [2147483648, 2147483648, 2147483648, 1]\n"}},
   "{ak} config check c.toml", "its sizes multiply past 2^62"},
  {"a kernel listed twice", {{"c.toml", kernel_entry("[64, 64]", "0.5") + kernel_entry("[64, 64]", "0.5")}}, "{ak} config check c.toml",
   "c.toml:7: [[kernel]] rmsnorm 64x64 fp16 is the kernel of line 2 again"},
  {"a workdir that is a file", {{"c.toml", "[run]\nworkdir = \"w\"\n" + kernel_entry("[8, 8]")}, {"w", "a file\n"}},
   "{ak} config check c.toml", "c.toml: [run] workdir = \"w\", name = \"autokernel\": the run folder"},
  {"a run folder that is a file", {{"c.toml", "[run]\nname = \"f\"\n" + kernel_entry("[8, 8]")}, {"runs/f", "a file\n"}},
   "{ak} run --config c.toml", "the run folder"},
  {"a workdir the user cannot write in", {{"c.toml", "[run]\nworkdir = \"w/sub\"\n" + kernel_entry("[8, 8]")}, {"w/x", ""}, {"w", kNoAccess}},
   "{ak} config check c.toml", "c.toml: [run] workdir = \"w/sub\""},
  {"a user type with no starter under the builtin proposer (as kernelbench writes it)",
   {{"c.toml", "[[kernel]]\nspec = \"t.toml\"\n"}, {"gelu_tanh.py", kGeluReference}, {"t.toml", kGeluSpec}},
   "{ak} config check c.toml", "c.toml:1: [[kernel]] of user type \"gelu_tanh\""},
  // A run folder: missing, a file, unreadable, its files folders, state.json of the wrong shape.
  {"status of a run folder that does not exist", {}, "{ak} status --run nowhere", "nowhere: no such folder"},
  {"status of a run folder that is a file", {{"f", "x"}}, "{ak} status --run f", "f: not a folder"},
  {"status of a run folder the user cannot enter", {{"r", kNoAccess}}, "{ak} status --run r", "r/results.tsv: cannot read: permission denied"},
  {"status of a run folder whose files the user cannot read", {{"r/results.tsv", kNoAccess}}, "{ak} status --run r",
   "r/results.tsv: cannot read: permission denied"},
  {"report of a run folder the user cannot enter", {{"r", kNoAccess}}, "{ak} report --run r --out out", "r/results.tsv: cannot read: permission denied"},
  {"status with results.tsv a folder", {{"r/results.tsv", kFolder}}, "{ak} status --run r", "r/results.tsv: is a directory"},
  {"status without results.tsv", {{"r/results.tsv", kAbsent}}, "{ak} status --run r", "r/results.tsv: no results table"},
  {"status with results.tsv of another tool", {{"r/results.tsv", "name,score\n"}}, "{ak} status --run r", "not autokernel's results header"},
  {"status with state.json a folder", {{"r/state.json", kFolder}}, "{ak} status --run r", "r/state.json: is a directory"},
  {"status with state.json unreadable", {{"r/state.json", kNoAccess}}, "{ak} status --run r", "r/state.json: cannot read"},
  {"status with state.json cut short", {{"r/state.json", kState.substr(0, 60)}}, "{ak} status --run r", "r/state.json: not valid JSON"},
  {"status with state.json empty", {{"r/state.json", ""}}, "{ak} status --run r", "r/state.json: not valid JSON"},
  {"status with state.json []", {{"r/state.json", "[]"}}, "{ak} status --run r", "r/state.json: is an array, not a run's state"},
  {"status with a string for seconds", {{"r/state.json", R"({"seconds": "abc"})"}}, "{ak} status --run r", "r/state.json: seconds is a string"},
  {"status with kernels a string", {{"r/state.json", R"({"kernels": "abc"})"}}, "{ak} status --run r", "kernels is a string: expected an array"},
  {"status with kernels of numbers", {{"r/state.json", R"({"kernels": [1, 2]})"}}, "{ak} status --run r", "kernels[0] is a number: expected an object"},
  {"status with gpus of mixed things", {{"r/state.json", R"({"gpus": [1, "x"]})"}}, "{ak} status --run r", "gpus[0] is a number"},
  {"status with a string for the LLM cost", {{"r/state.json", R"({"llm_cost_usd": "12"})"}}, "{ak} status --run r", "llm_cost_usd is a string"},
  {"status with a string for the wall time", {{"r/state.json", R"({"wall_seconds": "1h"})"}}, "{ak} status --run r", "wall_seconds is a string"},
  {"status with a kernel's number a string", {{"r/state.json", R"({"kernels": [{"tag": "x", "best_us": "fast"}]})"}}, "{ak} status --run r",
   "kernels[0].best_us is a string: expected a number"},
  {"status with a fractional experiment count", {{"r/state.json", R"({"kernels": [{"tag": "x", "experiments": 1.5}]})"}}, "{ak} status --run r",
   "kernels[0].experiments is a fractional number"},
  {"report with state.json []", {{"r/state.json", "[]"}}, "{ak} report --run r --out out", "r/state.json: is an array"},
  {"report with kernels of numbers", {{"r/state.json", R"({"kernels": [1, 2]})"}}, "{ak} report --run r --out out", "kernels[0] is a number"},
  {"report of several runs, one damaged", {{"r2/results.tsv", results_header() + "\n"}, {"r2/state.json", R"({"gpus": "x"})"}},
   "{ak} report --run r,r2 --out out", "r2/state.json: gpus is a string"},
  {"export of a run whose state.json is []", {{"r/state.json", "[]"}}, "{ak} export --run r --out pkg", "r/state.json: is an array"},
  {"export of a run whose kernels are numbers", {{"r/state.json", R"({"kernels": [1, 2]})"}}, "{ak} export --run r --out pkg", "kernels[0] is a number"},
  {"export of a run whose kernel names a path", {{"r/state.json", R"({"kernels": [{"tag": "../../etc/passwd"}]})"}}, "{ak} export --run r --out pkg",
   "kernels[0].tag is \"../../etc/passwd\": expected a kernel's name"},
  {"export of a run folder with no state.json", {{"r/state.json", kAbsent}}, "{ak} export --run r --out pkg", "r is not a run folder"},
  // A profile: a folder, empty, not JSON, an array, a numeric schema, fields of the wrong type.
  {"plan of a profile that is a folder", {{"p.json", kFolder}}, "{ak} plan p.json", "p.json: is a directory"},
  {"plan of an empty profile", {{"p.json", ""}}, "{ak} plan p.json", "p.json: the file is empty"},
  {"plan of a profile cut short", {{"p.json", kProfile.substr(0, 50)}}, "{ak} plan p.json", "p.json: not JSON"},
  {"plan of a profile that is an array", {{"p.json", "[]"}}, "{ak} plan p.json", "p.json: not an autokernel profile"},
  {"plan of a profile with a numeric schema", {{"p.json", R"({"schema": 1})"}}, "{ak} plan p.json", "p.json: not an autokernel profile"},
  {"plan of a profile whose kernels are a string", {{"p.json", R"({"schema": "autokernel-profile-1", "total_gpu_us": 1, "kernels": "x"})"}},
   "{ak} plan p.json", "kernels is a string"},
  {"plan of a profile with a kernel's share a string",
   {{"p.json", R"({"schema": "autokernel-profile-1", "total_gpu_us": 1, "kernels": [{"name": "k", "calls": 1, "total_us": 1, "mean_us": 1, "share": "all"}]})"}},
   "{ak} plan p.json", "p.json: kernels[0]: a profile field is missing or of the wrong type"},
  {"plan of an unreadable profile", {{"profile.json", kNoAccess}}, "{ak} plan profile.json", "profile.json: cannot read: permission denied"},
  {"plan with --top not a number", {}, "{ak} plan profile.json --top many", "--top many"},
  {"profile with --warmup-s not a number, before it runs anything", {}, "{ak} profile --warmup-s soon -- true", "--warmup-s soon: expected a number of seconds"},
  {"profile with --top 0", {}, "{ak} profile --top 0 --from-records nothing.jsonl", "--top 0: expected a number of kernels, at least 1"},
  {"verify with a profile that is a folder", {{"p.json", kFolder}}, "{ak} verify --model m.py --ops ops --profile p.json", "p.json: is a directory"},
  {"verify with a profile that is an array", {{"p.json", "[]"}}, "{ak} verify --model m.py --ops ops --profile p.json", "p.json: not an autokernel profile"},
  // Text that belongs elsewhere: a key where its variable's name goes, a base_url with no scheme.
  {"an API key pasted into api_key_env", {{"k.toml", "[llm]\nprovider = \"openai\"\nmodel = \"m\"\napi_key_env = \"" + kPastedKey + "\"\n" + kernel_entry("[8, 8]")}},
   "{ak} config check k.toml", "k.toml:4: llm.api_key_env holds what looks like an API key itself, not the name of a variable (the value is not shown)"},
  {"an API key pasted into api_key_file, for llm check", {{"k.toml", "[llm]\nprovider = \"openai\"\nmodel = \"m\"\napi_key_file = \"" + kPastedKey + "\"\n" + kernel_entry("[8, 8]")}},
   "{ak} llm check --config k.toml", "llm.api_key_file holds what looks like an API key itself"},
  {"llm check with a base_url that is no URL", {{"u.toml", "[llm]\nprovider = \"openai\"\nmodel = \"m\"\napi_key_env = \"K\"\nbase_url = \"localhost:8000/v1\"\n" + kernel_entry("[8, 8]")}},
   "{ak} llm check --config u.toml", "u.toml:5: llm.base_url = \"localhost:8000/v1\": not a URL the client can use"},
  // An output that is there already.
  {"kernelbench --out onto an existing config", {{"kb.toml", "# the user's own\n"}},
   "{ak} kernelbench " + std::string(AK_SOURCE_DIR) + "/examples/kernelbench/gelu_tanh.py --out kb.toml", "kb.toml exists: give --force to overwrite it"},
  // A kernel file.
  {"compile of a kernel file that is a folder", {{"k.cu", kFolder}}, "{ak} compile k.cu --kernel rmsnorm", "k.cu: is a directory"},
  {"compile of a kernel file that does not exist", {}, "{ak} compile nothing.cu --kernel rmsnorm", "nothing.cu: no such file"},
};
// clang-format on

bool running_as_root() { return ::geteuid() == 0; }

/// Writes a case's folder: the base files, then the case's own changes in order.
void prepare(const TempDir& d, const BadInput& c) {
  auto files = base_files();
  files.insert(files.end(), c.files.begin(), c.files.end());
  for (auto& [rel, text] : files) {
    const fs::path p = d.path / rel;
    fs::create_directories(p.parent_path());
    if (text == kNoAccess) {
      fs::permissions(p, fs::perms::none);
    } else if (text == kAbsent) {
      fs::remove_all(p);
    } else if (text == kFolder) {
      fs::remove_all(p);
      fs::create_directories(p);
    } else {
      fs::remove_all(p);
      std::ofstream(p, std::ios::binary) << text;
    }
  }
}

bool takes_access(const BadInput& c) {
  for (auto& f : c.files)
    if (f.second == kNoAccess) return true;
  return false;
}

/// The case's command line: in its folder, as an unprivileged user where it takes a permission
/// away (root reads everything), with stdin closed.
std::string command_line(const TempDir& d, const BadInput& c) {
  std::string ak = autokernel_binary();
  if (takes_access(c) && running_as_root()) ak = "setpriv --reuid=65534 --regid=65534 --clear-groups " + ak;
  std::string cmd = c.command;
  for (size_t at; (at = cmd.find("{ak}")) != std::string::npos;) cmd.replace(at, 4, ak);
  return "cd '" + d.path.string() + "' && " + cmd + " < /dev/null";
}

}  // namespace

TEST_CASE("every bad input ends with exit 1 or 2 and a message naming it, never a signal", "[cli][bad-input]") {
  const bool can_drop = !running_as_root() || std::system("setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null") == 0;
  for (const BadInput& c : kCases) {
    if (takes_access(c) && !can_drop) {
      std::printf("bad input '%s': left out, root reads every file and setpriv cannot drop to another user here\n", c.name);
      continue;
    }
    TempDir d;
    if (takes_access(c)) fs::permissions(d.path, fs::perms::all);   // the unprivileged user reaches the case's folder
    prepare(d, c);
    auto r = run_shell(command_line(d, c));
    INFO(c.name << "\n$ " << c.command << "\n" << r.out);
    CHECK(r.exit_code == c.exit_code);
    CHECK_THAT(r.out, Catch::Contains(c.says));
    CHECK_THAT(r.out, !Catch::Contains("terminate called") && !Catch::Contains("what():") && !Catch::Contains("Aborted"));
    CHECK_THAT(r.out, !Catch::Contains(kPastedKey));   // a secret given where it does not belong is never shown
    for (auto& [rel, text] : c.files)   // given back, so the folder can be removed
      if (text == kNoAccess) fs::permissions(d.path / rel, fs::perms::owner_all);
  }
}

TEST_CASE("a config given by its bare file name checks from its own folder", "[cli][bad-input]") {
  TempDir d;
  d.write("config.toml", kConfig);
  auto r = run_shell("cd '" + d.path.string() + "' && " + autokernel_binary() + " config check config.toml");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("config.toml: ok") && Catch::Contains(d.path.string() + "/runs/r"));
}

TEST_CASE("status shows the rows after a damaged one and names it, leaving the run folder as it is", "[cli][bad-input]") {
  TempDir d;
  BadInput c{"", {{"r/results.tsv", results_header() + "\n" + row(1, "baseline", true) + "2\trmsnorm\tnot a row\n" + row(3) + row(4)}}, "", ""};
  prepare(d, c);
  const std::string before = read_file((d.path / "r/results.tsv").string());
  auto r = run_autokernel("status --run " + (d.path / "r").string());
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("3 experiments") && Catch::Contains("last: experiment 4"));
  CHECK_THAT(r.out, Catch::Contains("results.tsv line 3 is not a row") && Catch::Contains("results.damaged.tsv"));
  CHECK(read_file((d.path / "r/results.tsv").string()) == before);
  auto report = run_autokernel("report --run " + (d.path / "r").string() + " --out " + (d.path / "out").string());
  CHECK(report.exit_code == 0);
  CHECK_THAT(read_file((d.path / "out/report.md").string()), Catch::Contains("Damaged rows of results.tsv") && Catch::Contains("line 3"));
}

TEST_CASE("plan reads a profile whose NVTX sizes pass 64 bits, naming the size it left unread", "[cli][bad-input]") {
  TempDir d;
  std::string profile = kProfile;
  profile.replace(profile.find("[[4096, 4096], [4096]]"), 22, "[[99999999999999999999, 2048]]");
  d.write("p.json", profile);
  auto r = run_autokernel("plan " + (d.path / "p.json").string());
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("99999999999999999999") && Catch::Contains("left unread"));
  CHECK_THAT(r.out, Catch::Contains("rmsnorm"));
}
