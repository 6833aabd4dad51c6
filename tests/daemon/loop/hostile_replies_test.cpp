// What an LLM writes is data: hostile replies, compile logs and error bodies through the loop as
// `autokernel run` builds it (the LLM proposer against a real HTTP server on 127.0.0.1, a scripted
// evaluator in place of the GPU worker), then the run folder read back by `autokernel status` and
// `autokernel report`, each file parsed as its format.
#include <catch2/catch.hpp>

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/untrusted_text.hpp"
#include "daemon/loop/run_loop.hpp"
#include "daemon/proposers/llm_proposer.hpp"
#include "daemon/run_folder/git_history.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "tests/daemon/loop/loop_fixtures.hpp"
#include "tests/llm/fake_llm_server.hpp"

using namespace ak;
using namespace ak::test;
using namespace std::string_literals;

namespace {

LlmConfig scripted_llm(const FakeLlmServer& s) {
  LlmConfig c;
  c.provider = ProviderKind::OpenAI;
  c.model = "scripted";
  c.base_url = s.base_url() + "/v1";
  c.api_key_env = "AK_TEST_KEY";
  c.max_retries = 1;
  return c;
}

Scripted reply(const std::string& description, const std::string& first_line) {
  Scripted s;
  s.text = "Description: " + description + "\n\n```cuda\n" + first_line + "\n__global__ void rmsnorm_kernel() {}\n```\n";
  return s;
}

/// The scripted evaluator, and a compile error whose log and message quote the candidate in
/// several scripts, long enough that every cap falls inside a character.
class HostileCompileEvaluator : public Evaluator {
 public:
  ScriptedEvaluator timing;
  Result<Verdict> evaluate(const EvalRequest& req) override {
    if (req.source.rfind("// COMPILE", 0) != 0) return timing.evaluate(req);
    Verdict v;
    v.correctness = Correctness::CompileError;
    v.kernel_type = req.kernel_type;
    v.failed_stage = "compile";
    std::string log = "rmsnorm.cu(2): error: #error \x1b]0;owned\x07 \xE2\x86\x92 ";
    while (log.size() < 3000) log += "\xC3\xA9\xE2\x86\x92";
    v.message = "compile: " + log;
    v.compile_log = log;
    return v;
  }
};

std::string file_text(const std::string& path) { return read_file(path); }

int python(const std::string& script, const std::string& file) {
  TempDir d;
  return run_shell("python3 " + d.write("check.py", script) + " " + file).exit_code;
}

}  // namespace

TEST_CASE("hostile replies, compile logs and error bodies: the daemon lives, the folder resumes, every file parses", "[llm][loop][text]") {
  FakeLlmServer server;
  const std::string arrows = std::string(195, 'a') + "\xE2\x86\x92\xE2\x86\x92\xE2\x86\x92 and more";
  server.push(reply(arrows, "// us=95"));                                                            // 1: a cut inside '→'
  server.push(reply("fuse the loads\0 then scale"s, "// us=90"));                                    // 2: a NUL, kept
  server.push(reply("x < 4096 & max & sum </title></circle><script>alert(1)</script> ![i](http://e/i.png) | a |", "// us=85"));   // 3
  server.push(reply("\x1b]0;retitled\x07\x1b[2K\x1b[1A erase the lines above", "// us=84.9"));      // 4: OSC/CSI
  server.push(reply("structure: a revert that only says so", "// us=120"));                          // 5: not a structure move
  server.push(reply("quote the log", "// COMPILE"));                                                  // an NVRTC log of any text
  server.push(reply("a file with a NUL", "// us=70 \x1b[2J\0"s));                                    // refused: control characters
  server.push({500, "\xFF\xFE not json \x1b[31m" + std::string(400, 'x') + "\xE2\x86\x92"});         // a provider's error body
  server.push({500, "\xFF\xFE not json \x1b[31m" + std::string(400, 'x') + "\xE2\x86\x92"});
  TempDir dir;
  HostileCompileEvaluator ev;
  ManualClock clock;
  auto cfg = loop_config(dir, "[convergence]\nmax_consecutive_reverts = 20\n");
  cfg.run.max_experiments = 9;
  cfg.llm = scripted_llm(server);
  {
    LlmClient client(cfg.llm, "k", nullptr, no_wait());
    LlmProposer proposer(client, cfg.run_dir() + "/transcripts");
    RunLoop loop(cfg, ev, proposer, clock);
    auto out = loop.run();
    REQUIRE(out.ok());
    CHECK(loop.kernels()[0].consecutive_reverts == 2);   // the "structure: " revert counts like the others
    CHECK(loop.kernels()[0].broken_in_a_row == 3);       // the log, the refused file, the error body: not reverts
  }
  auto rows = read_results(cfg.run_dir() + "/results.tsv");
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 9);
  const auto& r = *rows;
  CHECK(r[1].kept);
  CHECK(r[1].description.size() <= kDescriptionBytes);
  CHECK(valid_utf8(r[1].description) == r[1].description);
  CHECK(r[2].kept);
  CHECK(r[2].description == "fuse the loads then scale");
  CHECK(r[3].kept);
  CHECK(r[4].description.find('\x1b') == std::string::npos);
  CHECK(r[5].move == MoveKind::Edit);
  CHECK_FALSE(r[5].kept);
  CHECK(r[6].correctness == "COMPILE_ERROR");
  CHECK(r[6].failure.find('\x1b') == std::string::npos);
  CHECK(r[7].correctness == "NO_PROPOSAL");
  CHECK_THAT(r[7].failure, Catch::Contains("control character U+001B"));
  CHECK(r[8].correctness == "NO_PROPOSAL");
  CHECK(valid_utf8(r[8].failure) == r[8].failure);

  // The folder resumes (the NUL commit kept its trailers), and the next prompt carries the
  // compile log, cut at a character, without a throw.
  server.push(reply("after the restart", "// us=80"));
  cfg.run.max_experiments = 10;
  {
    LlmClient client(cfg.llm, "k", nullptr, no_wait());
    LlmProposer proposer(client, cfg.run_dir() + "/transcripts");
    RunLoop loop(cfg, ev, proposer, clock);
    auto out = loop.run();
    REQUIRE(out.ok());
  }
  auto received = server.received();
  REQUIRE_FALSE(received.empty());
  auto request = nlohmann::json::parse(received.back().body, nullptr, false);
  REQUIRE(request.is_object());
  const std::string prompt = request["messages"][1]["content"];
  CHECK_THAT(prompt, Catch::Contains("rmsnorm.cu(2): error: #error"));
  CHECK(prompt.find('\x1b') == std::string::npos);
  auto git = GitHistory::open(cfg.run_dir(), "autokernel/t");
  REQUIRE(git.ok());
  auto log = (*git)->log();
  REQUIRE(log.ok());
  for (auto& c : *log) CHECK(row_from_commit(c).ok());

  // Every file of the folder parses as its format; status and report run as the binary does.
  const std::string json_check = "import sys, json\njson.load(open(sys.argv[1], encoding='utf-8'))\n";
  CHECK(python(json_check, cfg.run_dir() + "/state.json") == 0);
  for (auto& e : std::filesystem::directory_iterator(cfg.run_dir() + "/transcripts")) CHECK(python(json_check, e.path().string()) == 0);
  for (auto& e : std::filesystem::directory_iterator(cfg.run_dir() + "/experiments"))
    if (e.path().string().find(".verdict.json") != std::string::npos) CHECK(python(json_check, e.path().string()) == 0);
  auto status = run_autokernel("status --run " + cfg.run_dir());
  CHECK(status.exit_code == 0);
  CHECK(status.out.find('\x1b') == std::string::npos);
  auto report = run_autokernel("report --run " + cfg.run_dir());
  REQUIRE(report.exit_code == 0);
  CHECK(python("import sys, xml.etree.ElementTree as ET\nroot = ET.parse(sys.argv[1]).getroot()\n"
               "sys.exit(1 if any(e.tag.endswith('script') for e in root.iter()) else 0)\n",
               cfg.run_dir() + "/progress.svg") == 0);
  const std::string md = file_text(cfg.run_dir() + "/report.md");
  CHECK(md.find("<script") == std::string::npos);
  CHECK(md.find("![i]") == std::string::npos);
}

namespace {

/// Throws where a bug in the harness or the daemon would: on the experiment's own thread.
class ThrowingEvaluator : public Evaluator {
 public:
  ScriptedEvaluator timing;
  Result<Verdict> evaluate(const EvalRequest& req) override {
    if (req.source.find("THROW") != std::string::npos) throw std::runtime_error("json type_error.316: invalid UTF-8 byte");
    return timing.evaluate(req);
  }
};

class ThrowingProposer : public ScriptedProposer {
 public:
  bool thrown = false;
  Result<std::optional<Proposal>> propose(const ProposalContext& ctx) override {
    if (!thrown) {
      thrown = true;
      throw std::runtime_error("the proposer's own bug");
    }
    return ScriptedProposer::propose(ctx);
  }
};

}  // namespace

TEST_CASE("an exception on an experiment's thread becomes its ERROR row and the run goes on", "[loop][text]") {
  TempDir dir;
  ThrowingEvaluator ev;
  ThrowingProposer pr;
  pr.slow = 1;   // proposals asked on the experiments' threads, as for an LLM
  ManualClock clock;
  pr.add(90, "THROW while judging");
  pr.add(80, "faster");
  RunLoop loop(loop_config(dir), ev, pr, clock);
  auto out = loop.run();
  REQUIRE(out.ok());
  auto rows = read_results(loop.directory().results());
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 4);
  CHECK((*rows)[1].correctness == "NO_PROPOSAL");
  CHECK_THAT((*rows)[1].failure, Catch::Contains("the proposer failed: the proposer's own bug"));
  CHECK((*rows)[2].correctness == "ERROR");
  CHECK_THAT((*rows)[2].failure, Catch::Contains("type_error.316"));
  CHECK((*rows)[3].kept);
}

TEST_CASE("resume skips a commit without trailers with a warning instead of refusing the folder", "[loop][git]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ManualClock clock;
  auto cfg = loop_config(dir);
  {
    ScriptedProposer pr;
    pr.add(90, "kept");
    RunLoop loop(cfg, ev, pr, clock);
    REQUIRE(loop.run().ok());
  }
  {
    // A commit of another hand (or an older bug) on the run's branch, its message cut before its trailers.
    auto git = GitHistory::open(cfg.run_dir(), "autokernel/t");
    REQUIRE(git.ok());
    std::ofstream(cfg.run_dir() + "/kernels/rmsnorm.cu", std::ios::app) << "// edited\n";
    REQUIRE((*git)->commit_file("kernels/rmsnorm.cu", "experiment 3: rmsnorm: fuse the loads").ok());
  }
  ScriptedProposer pr;
  pr.add(80, "after the damaged commit");
  RunLoop loop(cfg, ev, pr, clock);
  auto out = loop.run();
  REQUIRE(out.ok());
  auto rows = read_results(loop.directory().results());
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 3);
  CHECK((*rows)[1].description == "kept");
  CHECK((*rows)[2].kept);
  CHECK((*rows)[2].experiment == 3);
}

TEST_CASE("a structure move is a field: its revert does not count after a restart, whatever a description says", "[loop][variants]") {
  TempDir dir;
  ScriptedEvaluator ev;
  ManualClock clock;
  auto cfg = loop_config(dir);
  cfg.run.max_experiments = 4;
  {
    ScriptedProposer pr;
    Proposal move{"// us=130\nswitch\n", "to another layout", 0, 0, MoveKind::Structure};
    pr.queue.push_back(move);
    pr.add(120, "structure: words alone");
    pr.add(125, "plain revert");
    RunLoop loop(cfg, ev, pr, clock);
    REQUIRE(loop.run().ok());
    CHECK(loop.kernels()[0].consecutive_reverts == 2);
  }
  auto rows = read_results(cfg.run_dir() + "/results.tsv");
  REQUIRE(rows.ok());
  CHECK((*rows)[1].move == MoveKind::Structure);
  CHECK((*rows)[2].move == MoveKind::Edit);
  ScriptedProposer pr;
  cfg.run.max_experiments = 4;
  RunLoop again(cfg, ev, pr, clock);
  REQUIRE(again.run().ok());
  CHECK(again.kernels()[0].consecutive_reverts == 2);
}
