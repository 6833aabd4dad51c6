// A seeded generator of malformed inputs over the readers of what a user or a crash hands the
// daemon: the config, a profile, state.json and results.tsv. Valid inputs are mutated (cut short,
// bytes flipped, lines dropped or doubled, huge numbers and control characters inserted, JSON
// values swapped for values of other types) and each reader must answer with a Result, never an
// exception. AK_FUZZ_SEED=N replays a run; AK_FUZZ_ROUNDS=N changes its length.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "config/config.hpp"
#include "daemon/profile/amdahl_plan.hpp"
#include "daemon/profile/profile_data.hpp"
#include "daemon/profile/user_type_offer.hpp"
#include "daemon/report/run_report.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "daemon/run_folder/state_file.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

unsigned env_number(const char* name, unsigned otherwise) {
  const char* v = std::getenv(name);
  return v && *v ? unsigned(std::strtoul(v, nullptr, 10)) : otherwise;
}

/// The seed of this run, printed so a failure can be replayed.
unsigned fuzz_seed(const char* reader) {
  static const unsigned seed = env_number("AK_FUZZ_SEED", std::random_device{}());
  std::printf("reader fuzz (%s): seed %u (AK_FUZZ_SEED=%u replays it)\n", reader, seed, seed);
  return seed;
}

/// Rounds per reader: the four take seconds on a 2-core machine, well inside a minute.
int rounds(int otherwise) { return int(env_number("AK_FUZZ_ROUNDS", unsigned(otherwise))); }

class Mutator {
 public:
  explicit Mutator(unsigned seed) : rng_(seed) {}

  size_t below(size_t n) { return n ? std::uniform_int_distribution<size_t>(0, n - 1)(rng_) : 0; }

  /// One to three edits of the text.
  std::string text(std::string s) {
    for (size_t edits = 1 + below(3); edits-- > 0;) {
      const size_t at = below(s.size() + 1);
      switch (below(8)) {
        case 0: s.resize(at); break;                                            // cut short
        case 1: if (!s.empty()) s[below(s.size())] ^= char(1 << below(8)); break;  // a bit flipped
        case 2: s.insert(at, pick({"99999999999999999999", "-9223372036854775809", "1e999", "nan", "-0", "0x10"})); break;
        case 3: s.insert(at, std::string(1, char(below(32)))); break;          // a control character
        case 4: s.insert(at, pick({"\xff\xfe", "\xc3", "\xe2\x80\xae", "\x7f", "\t", "\n", "\r\n", "\"", "[", "{", "]]"})); break;
        case 5: s = drop_line(s); break;
        case 6: s = double_line(s); break;
        default: if (at < s.size()) s.erase(at, 1 + below(8)); break;
      }
    }
    return s;
  }

  /// One to three values of the document replaced by values of other types.
  nlohmann::json json(nlohmann::json j) {
    for (size_t edits = 1 + below(3); edits-- > 0;) {
      std::vector<nlohmann::json::json_pointer> paths;
      collect(j, nlohmann::json::json_pointer(), paths);
      j[paths[below(paths.size())]] = value();
    }
    return j;
  }

 private:
  template <size_t N>
  std::string pick(const char* const (&list)[N]) { return list[below(N)]; }
  std::string pick(std::initializer_list<const char*> list) { return *(list.begin() + below(list.size())); }

  nlohmann::json value() {
    switch (below(10)) {
      case 0: return "abc";
      case 1: return 1e308;
      case 2: return -1;
      case 3: return nlohmann::json::array();
      case 4: return nlohmann::json::object();
      case 5: return nullptr;
      case 6: return true;
      case 7: return nlohmann::json::parse("99999999999999999999");
      case 8: return nlohmann::json::array({1, "x", nullptr});
      default: return std::string("\x1b[2J\xff", 5);
    }
  }

  static void collect(const nlohmann::json& j, const nlohmann::json::json_pointer& at, std::vector<nlohmann::json::json_pointer>& out) {
    out.push_back(at);
    if (j.is_object())
      for (auto& [k, v] : j.items()) collect(v, at / k, out);
    else if (j.is_array())
      for (size_t i = 0; i < j.size(); ++i) collect(j[i], at / i, out);
  }

  std::string drop_line(const std::string& s) {
    const size_t start = s.rfind('\n', below(s.size() + 1));
    const size_t from = start == std::string::npos ? 0 : start + 1, end = s.find('\n', from);
    return s.substr(0, from) + (end == std::string::npos ? "" : s.substr(end + 1));
  }
  std::string double_line(const std::string& s) {
    const size_t start = s.rfind('\n', below(s.size() + 1));
    const size_t from = start == std::string::npos ? 0 : start + 1, end = s.find('\n', from);
    const std::string line = s.substr(from, end == std::string::npos ? std::string::npos : end - from + 1);
    return s.substr(0, from) + line + s.substr(from);
  }

  std::mt19937 rng_;
};

const char* kConfig = R"([run]
name = "fuzz"
workdir = "runs"
max_hours = 2.5
max_experiments = 40

[gpu]
device = 0
devices = [0, 1]
arch = "sm_90a"

[harness]
stage_timeout_s = 60
repetitions = 100
worker_env = ["HTTPS_PROXY"]

[llm]
provider = "openai"
model = "m"
base_url = "http://127.0.0.1:9"
cost_budget_usd = 5

[convergence]
max_consecutive_reverts = 5
peak_fraction = 0.9
keep_threshold = 0.01

[[kernel]]
type = "rmsnorm"
shape = [8192, 4096]
dtype = "fp16"
weight = 0.3
baseline_us = 120.5

[[kernel]]
type = "matmul"
shape = [4096, 4096, 4096]
dtype = "bf16"
weight = 0.4
)";

nlohmann::json profile() {
  return nlohmann::json::parse(R"({"schema": "autokernel-profile-1", "gpu": "H100", "command": ["python3", "m.py"],
    "wall_seconds": 3.0, "exit_code": 0, "warmup_s": 0.5, "total_gpu_us": 1000.0,
    "kernels": [
      {"name": "rms_norm_kernel", "type": "rmsnorm", "bound": "memory", "calls": 10, "total_us": 400.0, "mean_us": 40.0,
       "share": 0.4, "nvtx": "aten::rms_norm, sizes = [[2, 2048, 2048], [2048]]", "grid": [2048, 1, 1], "block": [256, 1, 1],
       "registers": 32, "shared_bytes": 0, "dtype": "fp16"},
      {"name": "ampere_gemm", "type": "matmul", "bound": "compute", "calls": 4, "total_us": 300.0, "mean_us": 75.0, "share": 0.3,
       "nvtx": "aten::mm, sizes = [[4096, 2048], [2048, 5632]]"},
      {"name": "mlp_fused", "type": "other", "bound": "memory", "calls": 2, "total_us": 200.0, "mean_us": 100.0, "share": 0.2,
       "nvtx": "ak.module:LlamaMLP sizes=[[2, 2048, 2048]] dtype=fp16 linear=gate_proj:2048x5632,up_proj:2048x5632,down_proj:5632x2048 act=SiLUActivation",
       "module": "LlamaMLP", "shape": [4096, 2048], "parts": ["silu", "mul"]},
      {"name": "misc", "type": "other", "bound": "memory", "calls": 1, "total_us": 100.0, "mean_us": 100.0, "share": 0.1,
       "nvtx": "ak.module:Custom sizes=[[7, 9]] dtype=fp32 layout=1 params=3 buffers=0 leaf=1 args=2 class=my.mod:Custom init=yes",
       "module": "Custom"}]})");
}

nlohmann::json state() {
  return nlohmann::json::parse(R"({"run": "fuzz", "status": "running", "experiments": 3, "next_experiment": 4,
    "amdahl_speedup": 1.2, "llm_tokens": 1200, "llm_cost_usd": 0.5, "seconds": 30.0, "wall_seconds": 40.0,
    "decisions": {"count": 3}, "stale_verdicts": {"count": 0, "judged_again": 0},
    "gpus": [{"device": 0, "model": "H100", "doing": "idle"}, {"device": 1, "model": "H100", "doing": "experiment 4"}],
    "kernels": [{"tag": "rmsnorm", "type": "rmsnorm", "shape": "8192x4096", "dtype": "fp16", "weight": 0.3, "baseline_us": 120.5,
                 "best_us": 100.0, "speedup": 1.2, "baseline": "the config", "pct_peak": 0.8, "throughput": 2000.0,
                 "experiments": 3, "consecutive_reverts": 1, "seconds": 30.0, "in_flight": 1, "gpu_model": "H100", "converged": ""}]})");
}

std::string results() {
  std::string t = results_header() + "\n";
  for (long long n = 1; n <= 6; ++n) {
    ResultRow r{n, n % 2 ? "rmsnorm" : "matmul", n % 2 ? "rmsnorm" : "matmul", 2000 + double(n), 100 - double(n), 0.8, 1.2,
                n == 3 ? "FAIL" : "PASS", 256, n == 1, n == 1 ? "abc123" : "", 100 * n, 3.5, "tier 1: AK_THREADS 256 -> 512"};
    r.move = n == 1 ? MoveKind::Baseline : MoveKind::Edit;
    r.failure = n == 3 ? "shape sweep: wrong" : "";
    t += format_row(r) + "\n";
  }
  return t;
}

/// JSON text of a mutated document: a string that is not UTF-8 goes in as its bytes.
std::string dump(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::ignore); }

/// Lines of `text` that hold a newline: what a table of it has, header included.
size_t whole_lines(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

/// Quiets the log for a test (the repair warns for every damaged row) and restores it after.
struct QuietLog {
  spdlog::level::level_enum was = spdlog::get_level();
  QuietLog() { spdlog::set_level(spdlog::level::off); }
  ~QuietLog() { spdlog::set_level(was); }
};

}  // namespace

TEST_CASE("the config reader answers every mutation of a valid config with a config or an error", "[fuzz]") {
  Mutator m(fuzz_seed("config"));
  test::TempDir d;
  const std::string path = (d.path / "fuzz.toml").string();
  REQUIRE(parse_config(kConfig, path).ok());
  for (int i = rounds(50000); i-- > 0;) {
    const std::string text = m.text(kConfig);
    INFO(text);
    CHECK_NOTHROW([&] {
      auto cfg = parse_config(text, path);
      if (cfg) (void)cfg->run_dir();
      else CHECK_FALSE(cfg.error().message.empty());
    }());
  }
}

TEST_CASE("the profile reader answers every mutation of a valid profile with a profile or an error, and plan reads what it accepts", "[fuzz]") {
  Mutator m(fuzz_seed("profile"));
  REQUIRE(profile_from_json(profile()).ok());
  for (int i = rounds(20000); i-- > 0;) {
    const bool as_text = m.below(2) == 0;
    const std::string text = as_text ? m.text(profile().dump()) : dump(m.json(profile()));
    INFO(text);
    CHECK_NOTHROW([&] {
      auto j = nlohmann::json::parse(text, nullptr, false);
      if (j.is_discarded()) return;
      auto p = profile_from_json(j);
      if (!p) {
        CHECK_FALSE(p.error().message.empty());
        return;
      }
      Plan plan = make_plan(*p, 10, 2.0);
      (void)plan_table(plan);
      (void)plan_toml(plan, "p.json");
      (void)user_type_offers(plan);
    }());
  }
}

TEST_CASE("the state reader refuses every mutation of state.json it cannot read, and status and report read what it accepts", "[fuzz]") {
  Mutator m(fuzz_seed("state"));
  test::TempDir d;
  const std::string path = (d.path / "state.json").string();
  for (int i = rounds(10000); i-- > 0;) {
    const bool as_text = m.below(2) == 0;
    const std::string text = as_text ? m.text(state().dump()) : dump(m.json(state()));
    INFO(text);
    {
      std::ofstream(path, std::ios::trunc) << text;
    }
    CHECK_NOTHROW([&] {
      auto j = read_state_file(path);
      if (!j) {
        CHECK_THAT(j.error().message, Catch::Contains(path));
        return;
      }
      RunSnapshot s{d.path.string(), *j, {}, {}};
      (void)status_text(s);
      (void)markdown_report(s, "progress.svg");
      (void)combined_report({s, s});
    }());
  }
}

TEST_CASE("the results reader keeps every whole row of a mutated table, and the daemon's repair leaves a table that reads clean", "[fuzz]") {
  Mutator m(fuzz_seed("results"));
  QuietLog quiet;
  test::TempDir d;
  const std::string path = (d.path / "results.tsv").string();
  for (int i = rounds(2000); i-- > 0;) {
    const std::string text = m.text(results());
    INFO(text);
    {
      std::ofstream(path, std::ios::trunc | std::ios::binary) << text;
    }
    std::filesystem::remove(damaged_rows_path(path));
    CHECK_NOTHROW([&] {
      auto read = read_results_table(path);
      auto opened = open_results(path);
      CHECK(read.ok() == opened.ok());
      if (!read || !opened) return;
      // Past the header, a line is a row or a damaged row (a last one without its newline too):
      // none is lost, and a damaged one hides nothing after it.
      CHECK(read->rows.size() == opened->size());
      const size_t lines = whole_lines(text), torn = !text.empty() && text.back() != '\n' ? 1 : 0;
      CHECK(read->rows.size() + read->damaged.size() == (lines == 0 ? 0 : lines - 1 + torn));
      auto again = read_results_table(path);
      CHECK(again.ok());
      if (!again) return;
      CHECK(again->damaged.empty());
      CHECK(again->rows.size() == read->rows.size());
      if (!read->damaged.empty()) CHECK(whole_lines(test::read_file(damaged_rows_path(path))) == read->damaged.size());
    }());
  }
}
