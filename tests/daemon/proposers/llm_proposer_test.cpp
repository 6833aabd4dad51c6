// The LLM proposer end to end on the CPU: prompts rendered, a real HTTP server of the tests' own
// answering, the loop recording what came back.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

#include "daemon/proposers/knobs.hpp"
#include "daemon/proposers/llm_proposer.hpp"
#include "kernels_cuda/variants.hpp"
#include "harness/compile/candidate_compile.hpp"
#include "daemon/run_folder/results_table.hpp"
#include "daemon/loop/run_loop.hpp"
#include "kernels_cuda/registry.hpp"
#include "llm/prompt_template.hpp"
#include "tests/daemon/loop/loop_fixtures.hpp"
#include "tests/llm/fake_llm_server.hpp"

using namespace ak;
using namespace ak::test;

namespace {

const std::string kKey = "sk-loop-SECRET-777";

ProposalContext rmsnorm_context() {
  ProposalContext ctx;
  ctx.spec = &rmsnorm_spec();
  ctx.experiment = 4;
  ctx.tag = "rmsnorm";
  ctx.shape = {8192, 8192};
  ctx.dtype = "fp16";
  ctx.best_source = rmsnorm_spec().starter_source();
  ctx.best_us = 109.38;
  ctx.best_throughput = 2454.4;
  ctx.pct_peak = 0.818;
  ctx.baseline_us = 189.23;
  ctx.gpu = "NVIDIA H100 80GB HBM3";
  ctx.arch = "sm_90a";
  ctx.throughput_unit = "GB/s";
  ctx.peak = 3001;
  ctx.history = {{"tier 1: AK_THREADS 256 -> 128", "", "PASS", 142.0, false, ""},
                 {"vectorize without a tail", "", "FAIL", 0, false, "edge cases: wrong output on 5x4097 fp16"}};
  ctx.history[0].experiment = 2;
  ctx.history[1].experiment = 3;
  return ctx;
}

std::string kernel_reply(const std::string& description, const std::string& body) {
  return "Description: " + description + "\n\n```cuda\n" + body + "\n```\n";
}

LlmConfig llm_config(const FakeLlmServer& s) {
  LlmConfig c;
  c.provider = ProviderKind::OpenAI;
  c.model = "scripted";
  c.base_url = s.base_url() + "/v1";
  c.api_key_env = "AK_TEST_KEY";
  c.max_retries = 1;
  c.usd_per_mtok_input = 1;
  c.usd_per_mtok_output = 2;
  return c;
}

}  // namespace

TEST_CASE("the message carries the GPU, the kernel, the best file, its numbers and the history", "[prompts][llm]") {
  auto q = build_chat_request(rmsnorm_context(), 8000);
  REQUIRE(q.ok());
  CHECK_THAT(q->system, Catch::Contains("template <typename T> __global__ void rmsnorm_kernel(const T* __restrict__ x"));
  CHECK_THAT(q->system, Catch::Contains("at least 1% faster"));
  CHECK_THAT(q->user, Catch::Contains("GPU: NVIDIA H100 80GB HBM3 (sm_90a); measured peak 3001 GB/s"));
  CHECK_THAT(q->user, Catch::Contains("109.38 us: 2454.4 GB/s, 81.8% of the measured peak"));
  CHECK_THAT(q->user, Catch::Contains("- #3 FAIL, reverted | idea: \"vectorize without a tail\" | why: \"edge cases: wrong output on 5x4097 fp16\""));
  CHECK_THAT(q->user, Catch::Contains("#define AK_THREADS 256"));
  CHECK_THAT(q->user, Catch::Contains("keep the row in registers"));   // the rmsnorm notes
  CHECK(q->max_output_tokens == 8000);
}

TEST_CASE("every kernel type gets its notes, its instantiations and its launch geometry in the prompt", "[llm]") {
  for (const KernelSpec* spec : all_specs()) {
    INFO(spec->type);
    ProposalContext ctx = rmsnorm_context();
    ctx.spec = spec;
    ctx.tag = spec->type;
    ctx.shape = spec->bench_shape;
    ctx.best_source = spec->starter_source();
    auto q = build_chat_request(ctx, 8000);
    REQUIRE(q.ok());
    CHECK_FALSE(spec->launch_help.empty());
    CHECK_THAT(q->system, Catch::Contains(spec->launch_help));
    CHECK_THAT(q->user, Catch::Contains(*prompt_text("notes/" + spec->type + ".txt")));
  }
  auto mm = rmsnorm_context();
  mm.spec = &flash_attention_spec();
  auto q = build_chat_request(mm, 8000);
  REQUIRE(q.ok());
  CHECK_THAT(q->system, Catch::Contains("instantiates it for __half and __nv_bfloat16.") && Catch::Contains("ak_tile_m"));
  CHECK_THAT(build_chat_request(rmsnorm_context(), 8000)->system,
             Catch::Contains("for __half, __nv_bfloat16 and float.") && Catch::Contains("ak_rows_per_block"));
}

TEST_CASE("the prompt names the type's structures and their one-line stories, not their code", "[llm][variants]") {
  ProposalContext ctx = rmsnorm_context();
  ctx.spec = &softmax_spec();
  ctx.best_source = softmax_spec().starter_source();
  auto q = build_chat_request(ctx, 8000);
  REQUIRE(q.ok());
  const auto vs = kernel_variants("softmax");
  REQUIRE(vs.size() >= 2);
  CHECK_THAT(q->user, Catch::Contains("the current best is starter"));
  CHECK_THAT(q->user, Catch::Contains("- " + vs[1].name + ": " + vs[1].story));
  CHECK_THAT(q->user, !Catch::Contains("online_max_sum"));   // a function of the variant's code
  ctx.best_source = *vs[1].source;
  CHECK_THAT(build_chat_request(ctx, 8000)->user, Catch::Contains("the current best is " + vs[1].name));
}

TEST_CASE("a usable reply becomes a proposal with its tokens, cost and a transcript without the key", "[llm]") {
  FakeLlmServer server;
  Scripted s;
  s.text = kernel_reply("keep the row in registers", "// new\ntemplate <typename T> __global__ void rmsnorm_kernel() {}");
  server.push(s);
  TempDir dir;
  LlmClient client(llm_config(server), kKey, nullptr, no_wait());
  LlmProposer p(client, (dir.path / "transcripts").string());
  auto r = p.propose(rmsnorm_context());
  REQUIRE(r.ok());
  REQUIRE(r->has_value());
  CHECK((*r)->description == "keep the row in registers");
  CHECK_THAT((*r)->source, Catch::StartsWith("// new\n"));
  CHECK((*r)->tokens == 1300);
  CHECK((*r)->cost_usd == Approx((1000 + 600) / 1e6));
  std::string transcript = read_file((dir.path / "transcripts/0004-rmsnorm.json").string());
  CHECK_THAT(transcript, Catch::Contains("keep the row in registers") && Catch::Contains("\"system\""));
  CHECK(transcript.find(kKey) == std::string::npos);
}

TEST_CASE("replies without a code block, or cut off, are failed proposals, not crashes", "[llm]") {
  FakeLlmServer server;
  Scripted none;
  none.text = "I think you should vectorize the loads.";
  server.push(none);
  Scripted cut;
  cut.text = kernel_reply("x", "template <typename T> __global__ void rmsnorm_kernel() {}");
  cut.stop = "length";
  server.push(cut);
  LlmClient client(llm_config(server), kKey, nullptr, no_wait());
  LlmProposer p(client, "");
  auto a = p.propose(rmsnorm_context());
  REQUIRE_FALSE(a.ok());
  CHECK_THAT(a.error().message, Catch::Contains("no ```cuda code block"));
  CHECK_FALSE(p.must_stop());
  auto b = p.propose(rmsnorm_context());
  REQUIRE_FALSE(b.ok());
  CHECK_THAT(b.error().message, Catch::Contains("cut off at the output token limit"));
}

TEST_CASE("the loop with the LLM proposer: kept, reverted, failed proposals recorded, 401 stops the run", "[llm][loop]") {
  FakeLlmServer server;
  Scripted good;
  good.text = kernel_reply("faster", "// us=90\ntemplate <typename T> __global__ void rmsnorm_kernel() {}");
  server.push(good);
  Scripted empty;
  empty.text = "no code today";
  server.push(empty);
  server.push({401, R"({"error":{"message":"bad key sk-loop-SECRET-777"}})"});
  TempDir dir;
  ScriptedEvaluator ev;
  ManualClock clock;
  auto cfg = loop_config(dir);
  cfg.llm = llm_config(server);
  LlmClient client(cfg.llm, kKey, nullptr, no_wait());
  LlmProposer proposer(client, (std::filesystem::path(cfg.run_dir()) / "transcripts").string());
  RunLoop loop(cfg, ev, proposer, clock);
  auto out = loop.run();
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(out.error().message, Catch::Contains("the API key in $AK_TEST_KEY was refused"));
  CHECK(out.error().message.find(kKey) == std::string::npos);
  auto rows = read_results(cfg.run_dir() + "/results.tsv");
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 3);
  CHECK((*rows)[1].kept);
  CHECK((*rows)[1].llm_tokens == 1300);
  CHECK((*rows)[2].correctness == "NO_PROPOSAL");
  for (auto& entry : std::filesystem::directory_iterator(std::filesystem::path(cfg.run_dir()) / "transcripts"))
    CHECK(read_file(entry.path().string()).find(kKey) == std::string::npos);
  CHECK(read_file(cfg.run_dir() + "/results.tsv").find(kKey) == std::string::npos);
  CHECK(read_file(cfg.run_dir() + "/state.json").find(kKey) == std::string::npos);
}

namespace {

/// The harness's compile step for real (the sandbox, the log filter, the contract), without a
/// GPU: what compiles is timed by the scripted rule (a "// us=" first line), what does not is a
/// COMPILE_ERROR with the log the real harness would give.
class CompilingEvaluator : public Evaluator {
 public:
  ScriptedEvaluator timing;
  Result<Verdict> evaluate(const EvalRequest& req) override {
    auto c = compile_candidate(*find_spec(req.kernel_type), req.source, req.kernel_type + ".cu", "sm_90a");
    if (!c) return c.error();
    if (c->ok) return timing.evaluate(req);
    Verdict v;
    v.correctness = Correctness::CompileError;
    v.kernel_type = req.kernel_type;
    v.failed_stage = "compile";
    v.message = c->message;
    v.compile_log = c->output.log;
    return v;
  }
};

}  // namespace

TEST_CASE("a candidate that includes the process environment sends nothing of it to the LLM", "[llm][loop][sandbox]") {
  const std::string marker = "AKMARKERDAEMONENV31337";
  setenv("AK_TEST_DAEMON_SECRET", marker.c_str(), 1);
  FakeLlmServer server;
  const std::string body = rmsnorm_spec().starter_source();
  Scripted environ_include, line_include, plain_include, done;
  environ_include.text = kernel_reply("read the environment", "%:include \"/proc/self/environ\"\n" + body);
  line_include.text = kernel_reply("quote it through a #line", "#line 1 \"/proc/self/environ\"\n%:include \"environ\"\n" + body);
  plain_include.text = kernel_reply("plainly", "#include \"/proc/self/environ\"\n" + body);
  done.text = "nothing more";
  for (auto* s : {&environ_include, &line_include, &plain_include, &done}) server.push(*s);
  TempDir dir;
  CompilingEvaluator ev;
  ManualClock clock;
  auto cfg = loop_config(dir, "max_experiments = 5\n[convergence]\nmax_consecutive_reverts = 4\n");
  cfg.llm = llm_config(server);
  LlmClient client(cfg.llm, kKey, nullptr, no_wait());
  LlmProposer proposer(client, (std::filesystem::path(cfg.run_dir()) / "transcripts").string());
  RunLoop loop(cfg, ev, proposer, clock);
  REQUIRE(loop.run().ok());
  auto rows = read_results(cfg.run_dir() + "/results.tsv");
  REQUIRE(rows.ok());
  REQUIRE(rows->size() >= 4);
  for (int i = 1; i <= 3; ++i) CHECK((*rows)[size_t(i)].correctness == "COMPILE_ERROR");
  // The prompts after those candidates did carry their compile errors, and nothing of the environment.
  auto requests = server.received();
  REQUIRE(requests.size() >= 3);
  CHECK_THAT(requests[1].body, Catch::Contains("/proc/self/environ"));
  for (auto& r : requests) {
    CHECK(r.body.find(marker) == std::string::npos);
    CHECK(r.body.find("AK_TEST_DAEMON_SECRET") == std::string::npos);
  }
  for (auto& entry : std::filesystem::recursive_directory_iterator(cfg.run_dir()))
    if (entry.is_regular_file()) {
      INFO(entry.path());
      CHECK(read_file(entry.path().string()).find(marker) == std::string::npos);
    }
}

TEST_CASE("llm check: exit 0 with the model and tokens, 1 for a refused key, 2 for a bad config", "[llm][cli]") {
  FakeLlmServer server;
  TempDir dir;
  std::string cfg = dir.write("llm.toml", "[llm]\nprovider = \"anthropic\"\nmodel = \"scripted\"\nbase_url = \"" +
                                              server.base_url() + "\"\napi_key_env = \"AK_CLI_KEY\"\nmax_retries = 0\n"
                                              "[[kernel]]\ntype = \"rmsnorm\"\n");
  auto ok = run_autokernel("llm check --config " + cfg, "AK_CLI_KEY=" + kKey);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.out, Catch::Contains("anthropic scripted at " + server.base_url() + "/v1/messages") &&
                         Catch::Contains("1200 input + 340 output tokens"));
  server.push({401, R"({"error":{"message":"invalid key"}})"});
  auto refused = run_autokernel("llm check --config " + cfg, "AK_CLI_KEY=" + kKey);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.out, Catch::Contains("the API key in $AK_CLI_KEY was refused"));
  CHECK(refused.out.find(kKey) == std::string::npos);
  auto no_key = run_autokernel("llm check --config " + cfg, "env -u AK_CLI_KEY");
  CHECK(no_key.exit_code == 2);
  CHECK_THAT(no_key.out, Catch::Contains("$AK_CLI_KEY is not set"));
}

TEST_CASE("llm check shows the model's reply with its escape codes as text, never acting on the terminal", "[llm][cli][text]") {
  FakeLlmServer server;
  Scripted s;
  s.text = "\x1b]0;retitled\x07\x1b[2J\x1b[31mok\xc2\x9b";
  server.push(s);
  TempDir dir;
  std::string cfg = dir.write("llm.toml", "[llm]\nprovider = \"openai\"\nmodel = \"scripted\"\nbase_url = \"" +
                                              server.base_url() + "/v1\"\n[[kernel]]\ntype = \"rmsnorm\"\n");
  auto r = run_autokernel("llm check --config " + cfg);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find('\x1b') == std::string::npos);
  CHECK(r.out.find('\x07') == std::string::npos);
  CHECK_THAT(r.out, Catch::Contains("\\x1b]0;retitled\\x07\\x1b[2J\\x1b[31mok\\u009b"));
}

namespace {
/// A server that takes connections (the kernel does, from the listen backlog) and never answers.
struct SilentServer {
  int port = 0;
  int fd = test::listen_on_loopback(port);
  ~SilentServer() { close(fd); }
};
}  // namespace

TEST_CASE("llm check against a server that never answers gives up after its own --timeout, with no retry", "[llm][cli]") {
  SilentServer server;
  TempDir dir;
  // The config's own patience (ten minutes, five retries) is not the check's.
  std::string cfg = dir.write("llm.toml", "[llm]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:" +
                                              std::to_string(server.port) + "/v1\"\nrequest_timeout_s = 600\nmax_retries = 5\n"
                                              "[[kernel]]\ntype = \"rmsnorm\"\n");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_autokernel("llm check --config " + cfg + " --timeout 1");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("no answer from http://127.0.0.1:" + std::to_string(server.port)) && Catch::Contains("--timeout"));
  CHECK(took < 8);
  auto bad = run_autokernel("llm check --config " + cfg + " --timeout soon");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.out, Catch::Contains("--timeout soon: expected seconds"));
}

TEST_CASE("llm check refuses a malformed base_url at once, naming the key", "[llm][cli]") {
  TempDir dir;
  std::string cfg = dir.write("llm.toml", "[llm]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"127.0.0.1:8000/v1\"\n"
                                              "max_retries = 5\n[[kernel]]\ntype = \"rmsnorm\"\n");
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_autokernel("llm check --config " + cfg);
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 5);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("llm.toml:4: llm.base_url = \"127.0.0.1:8000/v1\": not a URL the client can use") &&
                        Catch::Contains("http:// or https://"));
}

TEST_CASE("propose --print-prompt shows the prompt and writes the proposal", "[llm][cli]") {
  FakeLlmServer server;
  Scripted s;
  s.text = kernel_reply("one pass", "template <typename T> __global__ void softmax_kernel() {}");
  server.push(s);
  TempDir dir;
  std::string cfg = dir.write("llm.toml", "[llm]\nprovider = \"openai\"\nmodel = \"scripted\"\nbase_url = \"" +
                                              server.base_url() + "/v1\"\n[[kernel]]\ntype = \"softmax\"\n");
  std::string out = (dir.path / "p.cu").string();
  auto r = run_autokernel("propose --config " + cfg + " --kernel softmax --print-prompt --out " + out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("===== system =====") && Catch::Contains("Online softmax") && Catch::Contains("one pass"));
  CHECK(read_file(out) == "template <typename T> __global__ void softmax_kernel() {}\n");
}

TEST_CASE("the prompt lists the edits being judged on other GPUs so that the model proposes something else", "[llm][parallel]") {
  ProposalContext ctx = rmsnorm_context();
  ctx.in_flight.push_back({"vectorize the loads 8 wide", "", "IN_FLIGHT", 0, false, ""});
  auto q = build_chat_request(ctx, 8000);
  REQUIRE(q.ok());
  CHECK_THAT(q->user, Catch::Contains("- being judged now on another GPU, propose something different | idea: \"vectorize the loads 8 wide\""));
}

namespace {

/// tests/fixtures/scripted-llm-server.py with `flags`, on a free port of the loopback, stopped (by its
/// pid) when the test ends.
struct ScriptedModelServer {
  int port = 0;
  pid_t pid = -1;
  explicit ScriptedModelServer(const std::string& flags) {
    const int probe = test::listen_on_loopback(port);
    close(probe);
    pid = fork();
    if (pid == 0) {
      const std::string script = std::string(AK_SOURCE_DIR) + "/tests/fixtures/scripted-llm-server.py";
      const std::string command = "exec python3 " + script + " " + std::to_string(port) + " " + flags + " 2>/dev/null";
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 100 && !answering(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~ScriptedModelServer() {
    if (pid > 0) kill(pid, SIGTERM), waitpid(pid, nullptr, 0);
  }
  bool answering() const {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(uint16_t(port));
    const bool up = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    close(fd);
    return up;
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port) + "/v1"; }
};

/// NVRTC's verdict on a typo, without NVRTC: a file that says "flaot" does not compile, with the
/// log that names it; any other is timed by its vector width (wider loads, less time).
class TypoCompilingEvaluator : public Evaluator {
 public:
  Result<Verdict> evaluate(const EvalRequest& req) override {
    Verdict v;
    v.kernel_type = req.kernel_type;
    if (const size_t at = req.source.find("flaot"); at != std::string::npos) {
      const long line = std::count(req.source.begin(), req.source.begin() + long(at), '\n') + 1;
      v.correctness = Correctness::CompileError;
      v.failed_stage = "compile";
      v.message = "compile: 1 error";
      v.compile_log = "rmsnorm.cu(" + std::to_string(line) + "): error: identifier \"flaot\" is undefined";
      return v;
    }
    const auto knobs = read_knobs(req.source);
    const double vec = knobs.count("AK_VEC") ? double(knobs.at("AK_VEC")) : 1;
    v.correctness = Correctness::Pass;
    v.timing = Timing{};
    v.timing->median_us = 100 / vec;
    v.throughput = 1000 * vec;
    v.throughput_unit = "GB/s";
    v.peak_used = 3000;
    v.pct_peak = v.throughput / 3000;
    v.speedup = vec;
    v.baseline_source = "reference kernel";
    return v;
  }
};

}  // namespace

TEST_CASE("a scripted model that learns only from the prompt keeps the fix it found in the failed diff and log", "[llm][loop][feedback]") {
  if (run_shell("python3 -c 'import http.server'").exit_code != 0) {
    WARN("SKIPPED: no python3");
    return;
  }
  ScriptedModelServer server("--needs-feedback");
  REQUIRE(server.answering());
  TempDir dir;
  TypoCompilingEvaluator ev;
  ManualClock clock;
  auto cfg = loop_config(dir, "max_experiments = 3\n");
  cfg.llm.provider = ProviderKind::OpenAI;
  cfg.llm.model = "scripted";
  cfg.llm.base_url = server.base_url();
  cfg.llm.max_retries = 0;
  LlmClient client(cfg.llm, "", nullptr, no_wait());
  LlmProposer proposer(client, (std::filesystem::path(cfg.run_dir()) / "transcripts").string());
  RunLoop loop(cfg, ev, proposer, clock);
  auto out = loop.run();
  INFO((out ? "" : out.error().message));
  REQUIRE(out.ok());
  auto rows = read_results(cfg.run_dir() + "/results.tsv");
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 3);
  CHECK((*rows)[1].correctness == "COMPILE_ERROR");
  CHECK_FALSE((*rows)[1].kept);
  CHECK((*rows)[2].kept);
  CHECK((*rows)[2].latency_us == Approx(50));
  CHECK_THAT((*rows)[2].description, Catch::StartsWith("the wider loads again, with the typo the compiler named"));
  CHECK((*rows)[2].predicted_us == Approx(80));
  CHECK(read_file(cfg.run_dir() + "/kernels/rmsnorm.cu").find("#define AK_VEC 2") != std::string::npos);
  CHECK_THAT(read_file(cfg.run_dir() + "/notes/rmsnorm.json"), Catch::Contains("avoid: typos the compiler catches"));
  // The compile error was a broken proposal, not a revert.
  CHECK(loop.kernels()[0].consecutive_reverts == 0);
}

TEST_CASE("propose --run prints the prompt the daemon would send next: the failed diff, the ledger, the verdict data, the budget", "[llm][cli]") {
  TempDir dir;
  const std::string extra = "max_experiments = 4\n";
  const std::string config_text = "[run]\nname = \"t\"\nworkdir = \"" + dir.path.string() + "\"\n" + extra +
                                  "[[kernel]]\ntype = \"rmsnorm\"\nshape = [1024, 1024]\nweight = 0.5\n";
  const std::string config = dir.write("run.toml", config_text);
  {
    ScriptedEvaluator ev;
    ev.pair_noise = 0.004;
    ScriptedProposer pr;
    ManualClock clock;
    pr.add(99.8, "two rows per block");
    pr.queue.back().predicted_us = 90;
    pr.queue.push_back({"// COMPILE\n#define AK_VEC 8\n", "16-byte loads", 0, 0});
    pr.add(80, "row in registers");
    RunLoop loop(loop_config(dir, extra), ev, pr, clock);
    REQUIRE(loop.run().ok());
  }
  const std::string run = (dir.path / "t").string();
  auto r = run_autokernel("propose --config " + config + " --run " + run + " --kernel rmsnorm");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("This is experiment 5 of the run, number 5 on this kernel."));
  CHECK_THAT(r.out, Catch::Contains("Broken proposals in a row: 0 of 8"));
  CHECK_THAT(r.out, Catch::Contains("- #2 PASS 99.80 us, x0.998 +- 0.004 of the best beside it (within noise: not slower, not proven faster) (predicted 90.00 us), reverted | idea: \"two rows per block\""));
  CHECK_THAT(r.out, Catch::Contains("* #4 PASS 80.00 us"));
  CHECK_THAT(r.out, Catch::Contains("#3 COMPILE_ERROR | idea: \"16-byte loads\"\nIts file against the current best:\n```diff\n"));
  CHECK_THAT(r.out, Catch::Contains("+#define AK_VEC 8") && Catch::Contains("identifier \"flaot\" is undefined"));
  CHECK_THAT(r.out, Catch::Contains("// us=80"));   // the best file, last
  auto bad = run_autokernel("propose --config " + config + " --run " + run + " --kernel nope");
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.out, Catch::Contains("the config lists no kernel 'nope' (its kernels: rmsnorm)"));
}

TEST_CASE("a structure the model asked to see is shown whole in the next prompt, and an unknown name is said to be unknown", "[llm][variants]") {
  ProposalContext ctx = rmsnorm_context();
  ctx.spec = &softmax_spec();
  ctx.best_source = softmax_spec().starter_source();
  const auto vs = kernel_variants("softmax");
  REQUIRE(vs.size() >= 2);
  ctx.shown_variant = vs[1].name;
  auto q = build_chat_request(ctx, 8000);
  REQUIRE(q.ok());
  CHECK_THAT(q->user, Catch::Contains("The file of structure " + vs[1].name + ", which you asked to see"));
  CHECK_THAT(q->user, Catch::Contains(vs[1].source->substr(0, 200)));
  // The best file stays the last block of the message.
  CHECK(q->user.rfind(ctx.best_source.substr(0, 200)) > q->user.rfind(vs[1].source->substr(0, 200)));
  ctx.shown_variant = "no_such";
  CHECK_THAT(build_chat_request(ctx, 8000)->user, Catch::Contains("You asked to see structure \"no_such\": the library has no structure of that name"));
}
