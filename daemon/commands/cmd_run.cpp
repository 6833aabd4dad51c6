// autokernel run --config FILE: the optimization loop, as a foreground process or a service.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <memory>

#include <spdlog/spdlog.h>

#include "config/config.hpp"
#include "daemon/commands/arg_parser.hpp"
#include "daemon/commands/commands.hpp"
#include "daemon/commands/logging.hpp"
#include "daemon/loop/run_loop.hpp"
#include "daemon/loop/run_preflight.hpp"
#include "daemon/proposers/builtin_tuner.hpp"
#include "daemon/proposers/combined_proposer.hpp"
#include "daemon/proposers/llm_proposer.hpp"
#include "daemon/run_folder/kernel_progress.hpp"
#include "harness/gpu/cuda_driver.hpp"
#include "harness/process/worker_environment.hpp"
#include "harness/worker/worker_evaluator.hpp"
#include "llm/api_key.hpp"

namespace ak {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = [](int sig) { (sig == SIGHUP ? g_reload : g_stop) = true; };
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaction(sig, &sa, nullptr);
}

}  // namespace

int run_command(const Args& args) {
  std::string file;
  ArgParser p("autokernel run --config FILE",
              "Runs the keep/revert loop on the kernels of a config until every one has converged or a\n"
              "budget is spent; resumes a run folder left by an earlier run (or a crash). SIGTERM or\n"
              "Ctrl-C stops it within seconds (exit 0), SIGHUP reloads budgets and settings. Needs a GPU.");
  p.option("config", "FILE", "the TOML config (see config/example.toml)", &file);
  if (int rc = parse_or_exit(p, args); rc >= 0) return rc;
  if (file.empty()) return std::fprintf(stderr, "autokernel run: --config FILE is required\n"), kExitUsage;
  auto cfg = load_config(file);
  if (!cfg) return std::fprintf(stderr, "%s\n", cfg.error().message.c_str()), kExitUsage;
  if (auto s = check_before_gpu(*cfg); !s) return std::fprintf(stderr, "%s\n", s.error().message.c_str()), kExitUsage;
  if (auto drv = cuda_driver(); !drv) {
    std::fprintf(stderr,
                 "autokernel run: a GPU is needed: %s.\nWithout a GPU these work: autokernel config check %s, "
                 "autokernel compile starter --kernel rmsnorm, autokernel kernels.\n",
                 drv.error().message.c_str(), file.c_str());
    return kExitUsage;
  }
  std::string api_key;
  if (cfg->llm.provider != ProviderKind::Builtin) {
    auto key = load_api_key(cfg->llm);
    if (!key) return std::fprintf(stderr, "%s: %s\n", file.c_str(), key.error().message.c_str()), kExitUsage;
    api_key = *key;
  }
  RunDirectory dir(cfg->run_dir());
  if (auto s = dir.create(); !s) return std::fprintf(stderr, "%s\n", s.error().message.c_str()), kExitFailure;
  if (auto s = add_log_file(dir.log()); !s) spdlog::warn("{}", s.error().message);
  install_signal_handlers();

  auto models = gpu_models();
  if (!models) return std::fprintf(stderr, "autokernel run: %s\n", models.error().message.c_str()), kExitFailure;
  auto devices = chosen_devices(cfg->gpu, int(models->size()));
  if (!devices) return std::fprintf(stderr, "%s: %s\n", file.c_str(), devices.error().message.c_str()), kExitUsage;
  // One worker process per GPU: a crash or a hang restarts that GPU's worker alone.
  std::vector<std::unique_ptr<WorkerEvaluator>> evaluators;
  std::vector<GpuWorker> gpus;
  for (int d : *devices) {
    WorkerEvaluator::Options opt;
    opt.device = d;
    opt.stage_timeout_s = cfg->harness.stage_timeout_s;
    opt.cancel = &g_stop;
    opt.environment = minimal_environment(cfg->harness.worker_env);
    evaluators.push_back(std::make_unique<WorkerEvaluator>(opt));
    gpus.push_back({d, (*models)[size_t(d)], evaluators.back().get()});
  }
  if (auto s = check_models(gpus, cfg->gpu.mixed_models); !s)
    return std::fprintf(stderr, "%s: %s\n", file.c_str(), s.error().message.c_str()), kExitUsage;
  BuiltinTuner tuner(cfg->tuner.order_by_counters);
  if (!cfg->tuner.order_by_counters)
    spdlog::info("the builtin tuner keeps its playbook order whatever the counters say ([tuner] order_by_counters = false)");
  LlmClient client(cfg->llm, api_key, &g_stop, {});
  LlmProposer llm(client, dir.path("transcripts"));
  CombinedProposer both(tuner, llm);
  Proposer& proposer = configured_proposer(cfg->llm, tuner, llm, both);
  SteadyClock clock;
  ServiceNotifier notifier;
  RunLoop loop(*cfg, gpus, proposer, clock, LoopSignals{&g_stop, &g_reload}, &notifier);
  loop.on_reload = [&](const Config& fresh) {
    if (auto key = load_api_key(fresh.llm); key) client.reconfigure(fresh.llm, *key);
    else spdlog::error("SIGHUP: keeping the LLM settings: {}", key.error().message);
  };
  auto out = loop.run();
  if (!out) {
    spdlog::error("the run stopped: {}", out.error().message);
    return kExitFailure;
  }
  spdlog::info("run {} ended: {}", cfg->run.name, out->why);
  std::printf("%s", out->summary.c_str());
  return kExitOk;
}

}  // namespace ak
