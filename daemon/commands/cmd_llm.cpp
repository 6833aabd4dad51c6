// autokernel llm check --config FILE and autokernel propose --config FILE --kernel TYPE: the LLM
// side alone, no GPU needed.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "common/atomic_write.hpp"
#include "common/text_escape.hpp"
#include "common/untrusted_text.hpp"
#include "config/config.hpp"
#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/commands/kernel_file.hpp"
#include "daemon/proposers/builtin_tuner.hpp"
#include "daemon/proposers/combined_proposer.hpp"
#include "daemon/proposers/llm_proposer.hpp"
#include "daemon/proposers/proposal_context.hpp"
#include "kernels_cuda/registry.hpp"
#include "llm/api_key.hpp"

namespace ak {
namespace {

/// The config and the key, or the exit code to leave with.
struct LlmSetup {
  Config cfg;
  std::string key;
};
Result<LlmSetup> llm_setup(const std::string& file, bool need_remote) {
  auto cfg = load_config(file);
  if (!cfg) return cfg.error();
  if (need_remote && cfg->llm.provider == ProviderKind::Builtin)
    return error(file + ": [llm] provider is \"builtin\": there is no LLM to check (set provider = \"openai\" or \"anthropic\")");
  auto key = load_api_key(cfg->llm);
  if (!key) return error(file + ": " + key.error().message);
  return LlmSetup{*cfg, *key};
}

LlmClient::Options once() {
  LlmClient::Options o;
  o.breaker_failures = 1 << 30;
  return o;
}

}  // namespace

int llm_command(const Args& args) {
  std::string action, file, timeout = "30";
  ArgParser p("autokernel llm check --config FILE [--timeout SECONDS]",
              "Sends one tiny request to the configured LLM and prints the provider, model, latency and\n"
              "tokens used. One attempt, no retries, bounded by --timeout (default 30 s, connecting included),\n"
              "whatever the config's request_timeout_s. Exit 0 when it answered, 1 when the key was refused,\n"
              "the server is unreachable or did not answer in time, 2 for a bad config or usage.");
  p.positional("check", "the action (only 'check' exists)", &action)
      .option("config", "FILE", "the TOML config", &file)
      .option("timeout", "SECONDS", "how long the check may wait for the answer (default 30)", &timeout);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (action != "check" || file.empty())
    return std::fprintf(stderr, "usage: autokernel llm check --config FILE [--timeout SECONDS]\n"), kExitUsage;
  char* end = nullptr;
  const double limit_s = std::strtod(timeout.c_str(), &end);
  if (end == timeout.c_str() || *end || !(limit_s >= 0.1 && limit_s <= 3600))
    return std::fprintf(stderr, "autokernel llm check: --timeout %s: expected seconds from 0.1 to 3600, e.g. --timeout 30\n",
                        terminal_safe(timeout).c_str()), kExitUsage;
  auto setup = llm_setup(file, true);
  if (!setup) return std::fprintf(stderr, "%s\n", setup.error().message.c_str()), kExitUsage;
  LlmConfig cfg = setup->cfg.llm;
  // A check answers about now: a hung or overloaded server is reported, not waited out.
  cfg.max_retries = 0;
  cfg.request_timeout_s = limit_s;
  cfg.connect_timeout_s = std::min(cfg.connect_timeout_s, limit_s);
  LlmClient client(cfg, setup->key, nullptr, once());
  auto t0 = std::chrono::steady_clock::now();
  auto r = client.ask({"You are a health check.", "Reply with the single word: ok", 64});
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r) {
    std::fprintf(stderr, "autokernel llm check: %s\n", terminal_safe(r.error().message).c_str());
    if (s >= 0.9 * limit_s)
      std::fprintf(stderr, "autokernel llm check: gave up after %.1f s (--timeout %g; give a longer one for a slow server)\n", s, limit_s);
    return kExitFailure;
  }
  // The reply is the server's text: shown with its control characters as escapes, never acting.
  std::printf("%s %s at %s: answered in %.2f s, %lld input + %lld output tokens: \"%s\"\n", provider_name(cfg.provider),
              terminal_safe(cfg.model).c_str(), terminal_safe(build_request(cfg, "", {}).url).c_str(), s, r->input_tokens,
              r->output_tokens, terminal_safe(cap_utf8(valid_utf8(r->text), 60)).c_str());
  return kExitOk;
}

namespace {

/// `propose --run DIR --kernel TAG`: the prompt the daemon would send next for that kernel of the
/// run, read from the folder (also while the daemon works in it); nothing is asked or changed.
int print_next_prompt(const Config& cfg, const std::string& run, const std::string& tag) {
  auto ctx = next_proposal_context(cfg, run, tag);
  if (!ctx) return std::fprintf(stderr, "autokernel propose: %s\n", ctx.error().message.c_str()), kExitUsage;
  auto q = build_chat_request(*ctx, cfg.llm.max_output_tokens);
  if (!q) return std::fprintf(stderr, "autokernel propose: %s\n", q.error().message.c_str()), kExitFailure;
  std::printf("===== system =====\n%s\n===== user =====\n%s\n===== end =====\n", q->system.c_str(), q->user.c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "%zu bytes (the limit is %lld, [llm] max_prompt_bytes)\n", q->system.size() + q->user.size(),
               (long long)cfg.llm.max_prompt_bytes);
  return kExitOk;
}

}  // namespace

int propose_command(const Args& args) {
  std::string file, type, from, out, run;
  bool print_prompt = false;
  ArgParser p("autokernel propose --config FILE --kernel TYPE [--from FILE.cu] [--out FILE.cu] [--print-prompt]\n"
              "       autokernel propose --config FILE --run DIR --kernel TAG",
              "Renders the prompt for a kernel (its starter, or --from), asks the configured proposer once,\n"
              "writes the proposed file (--out, default proposed-TYPE.cu) and prints its description.\n"
              "--print-prompt shows exactly what the model is sent. Needs no GPU.\n"
              "With --run, prints the prompt the daemon would send next for the kernel TAG of that run\n"
              "(its ledger, failures, scratchpad and budget as they stand) and asks nothing.");
  p.option("config", "FILE", "the TOML config", &file)
      .option("kernel", "TYPE", "the kernel type (with --run: the kernel's tag in the run)", &type)
      .option("run", "DIR", "a run folder (workdir/name): print its next prompt for --kernel", &run)
      .option("from", "FILE.cu", "the current best file (default: the starter)", &from)
      .option("out", "FILE.cu", "where to write the proposal", &out)
      .flag("print-prompt", "print the system prompt and the message first", &print_prompt);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (file.empty() || type.empty()) return std::fprintf(stderr, "autokernel propose: --config and --kernel are required\n"), kExitUsage;
  if (!run.empty() && (!from.empty() || !out.empty()))
    return std::fprintf(stderr, "autokernel propose: --run prints the run's next prompt: --from and --out do not apply\n"), kExitUsage;
  if (!run.empty()) {   // nothing is asked: no key needed
    auto cfg = load_config(file);
    if (!cfg) return std::fprintf(stderr, "%s\n", cfg.error().message.c_str()), kExitUsage;
    return print_next_prompt(*cfg, run, type);
  }
  auto setup = llm_setup(file, false);
  if (!setup) return std::fprintf(stderr, "%s\n", setup.error().message.c_str()), kExitUsage;
  auto spec = spec_for(type);
  if (!spec) return std::fprintf(stderr, "%s\n", spec.error().message.c_str()), kExitUsage;
  auto source = read_kernel_file(from, **spec);
  if (!source) return std::fprintf(stderr, "%s\n", source.error().message.c_str()), kExitUsage;
  spec = spec_for_file(type, *source);  // the prompt shows the contract the file follows
  if (!spec) return std::fprintf(stderr, "%s\n", spec.error().message.c_str()), kExitUsage;
  ProposalContext ctx;
  ctx.spec = *spec;
  ctx.tag = type;
  ctx.experiment = 1;
  ctx.shape = (*spec)->bench_shape;
  for (auto& k : setup->cfg.kernels)
    if (k.type == type) ctx.shape = k.shape, ctx.dtype = k.dtype;
  if (ctx.dtype.empty()) ctx.dtype = "fp16";
  ctx.best_source = *source;
  ctx.keep_threshold = setup->cfg.convergence.keep_threshold;
  ctx.max_prompt_bytes = size_t(setup->cfg.llm.max_prompt_bytes);
  ctx.budget.max_reverts = setup->cfg.convergence.max_consecutive_reverts;
  ctx.budget.max_broken = setup->cfg.convergence.max_broken_in_a_row;
  ctx.budget.target_pct_peak = setup->cfg.convergence.peak_fraction;
  ctx.budget.target_speedup = setup->cfg.convergence.target_speedup;
  ctx.budget.max_hours = setup->cfg.convergence.max_hours_per_kernel;
  if (print_prompt) {
    auto q = build_chat_request(ctx, setup->cfg.llm.max_output_tokens);
    if (!q) return std::fprintf(stderr, "%s\n", q.error().message.c_str()), kExitFailure;
    std::printf("===== system =====\n%s\n===== user =====\n%s\n===== end =====\n", q->system.c_str(), q->user.c_str());
  }
  BuiltinTuner tuner(setup->cfg.tuner.order_by_counters);
  LlmClient client(setup->cfg.llm, setup->key, nullptr, once());
  LlmProposer llm(client, "");
  CombinedProposer both(tuner, llm);
  Proposer& proposer = configured_proposer(setup->cfg.llm, tuner, llm, both);
  auto proposal = proposer.propose(ctx);
  if (!proposal) return std::fprintf(stderr, "autokernel propose: %s\n", proposal.error().message.c_str()), kExitFailure;
  if (!*proposal) return std::fprintf(stderr, "autokernel propose: the proposer has nothing to propose\n"), kExitFailure;
  if (out.empty()) out = "proposed-" + type + ".cu";
  if (auto s = write_file_atomic(out, (*proposal)->source); !s) return std::fprintf(stderr, "%s\n", s.error().message.c_str()), kExitFailure;
  std::printf("%s\nwritten to %s (%lld tokens)\n", terminal_safe((*proposal)->description).c_str(), out.c_str(), (*proposal)->tokens);
  return kExitOk;
}

}  // namespace ak
