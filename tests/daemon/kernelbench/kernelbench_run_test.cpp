// The KernelBench examples the way a user takes them: `autokernel kernelbench` writes the config,
// `autokernel run` drives the loop against an LLM server on 127.0.0.1 that answers each problem
// with its honest kernel, then its wrong one, then its cheating one, and `autokernel report` gives
// KernelBench's numbers. Needs a GPU and a Python with torch (AK_REFERENCE_PYTHON, else python3).
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "daemon/run_folder/results_table.hpp"
#include "tests/llm/fake_llm_server.hpp"
#include "tests/support.hpp"

using namespace ak;
using Catch::Contains;
using nlohmann::json;

namespace {

const std::string kExamples = std::string(AK_SOURCE_DIR) + "/examples/kernelbench/";
const char* kProblems[] = {"gelu_tanh", "linear_relu", "log_softmax", "residual_layernorm", "sum_middle_dim"};
const char* kReplies[] = {"", ".wrong", ".cheating"};

/// The next file of the problem a request names ("Kernel: kb_<problem>," in the prompt).
struct ProblemReplies {
  std::mutex mu;
  std::map<std::string, int> given;
  std::optional<test::Scripted> operator()(const test::Received& r) {
    for (const char* p : kProblems) {
      if (r.body.find(std::string("Kernel: kb_") + p + ",") == std::string::npos) continue;
      std::lock_guard<std::mutex> l(mu);
      const int n = given[p]++;
      test::Scripted s;
      s.text = n < 3 ? std::string("Description: ") + (n ? kReplies[n] + 1 : "honest") + "\n```cuda\n" +
                           test::read_file(kExamples + "kernels/" + p + kReplies[n] + ".cu") + "```\n"
                     : "Nothing more to try.";
      return s;
    }
    return std::nullopt;
  }
};

}  // namespace

TEST_CASE("the KernelBench examples go through the loop: honest kept with its speedups, wrong and cheating reverted, and the report counts fast_p",
          "[gpu][kernelbench][loop]") {
  if (!test::gpu_or_skip()) return;
  test::TempDir dir;
  const std::string config = (dir.path / "kb.toml").string();
  std::string files;
  for (const char* p : kProblems) files += " " + kExamples + p + ".py";
  test::RunOutput imported = test::run_autokernel("kernelbench" + files + " --out " + config);
  INFO(imported.out);
  REQUIRE(imported.exit_code == 0);

  test::FakeLlmServer llm;
  ProblemReplies replies;
  llm.respond = [&](const test::Received& r) { return replies(r); };
  std::string text = test::read_file(config);
  text.replace(text.find("[llm]\n"), 6, "[llm]\nprovider = \"openai\"\nmodel = \"scripted\"\nbase_url = \"" + llm.base_url() +
                                           "/v1\"\nmax_retries = 0\n");
  // Neither the 2x nor the peak may end a kernel before its wrong and cheating files are judged.
  text += "\n[convergence]\nmax_consecutive_reverts = 2\ntarget_speedup = 1000\npeak_fraction = 1.0\n";
  std::ofstream(config) << text;

  test::RunOutput run = test::run_autokernel("run --config " + config);
  INFO(run.out.substr(run.out.size() > 6000 ? run.out.size() - 6000 : 0));
  INFO("the reference process needs a Python with torch and CUDA: set AK_REFERENCE_PYTHON");
  REQUIRE(run.exit_code == 0);
  const std::string folder = (dir.path / "runs" / "kb").string();
  auto rows = open_results(folder + "/results.tsv");
  REQUIRE(rows.ok());
  for (const char* p : kProblems) {
    std::vector<ResultRow> mine;
    for (auto& r : *rows)
      if (r.tag == std::string("kb_") + p) mine.push_back(r);
    INFO(p);
    REQUIRE(mine.size() == 3);
    CHECK(mine[0].correctness == "PASS");
    CHECK(mine[0].kept);
    CHECK(mine[0].description == "baseline: the starter; speedups against PyTorch eager");
    CHECK(mine[0].speedup > 0);
    char name[64];
    std::snprintf(name, sizeof name, "/experiments/%04lld-kb_", mine[0].experiment);
    const json v = json::parse(test::read_file(folder + name + p + ".verdict.json"));
    CHECK(v["reference_us"].get<double>() > 0);
    CHECK(v["torch_compile_us"].get<double>() > 0);
    CHECK(v["kernelbench_pass"] == true);
    CHECK(mine[1].correctness == "FAIL");
    CHECK_FALSE(mine[1].kept);
    CHECK(mine[2].correctness != "PASS");
    CHECK_FALSE(mine[2].kept);
  }

  test::RunOutput report = test::run_autokernel("report --run " + folder);
  REQUIRE(report.exit_code == 0);
  const std::string md = test::read_file(folder + "/report.md");
  CHECK_THAT(md, Contains("## KernelBench") && Contains("| kb\\_linear\\_relu | yes | yes |") && Contains("| 1.5 |"));
}
