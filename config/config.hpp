#pragma once
/// The run's configuration: the TOML schema of a run and the checks that keep a bad file from
/// starting one. Every rejection names the file, the line, the key, the value and what was
/// expected; values of keys that may hold secrets are never echoed.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "kernels_cuda/user_type.hpp"

namespace ak {

enum class ProviderKind { Builtin, OpenAI, Anthropic };
const char* provider_name(ProviderKind p);

struct RunConfig {
  std::string name = "autokernel";
  std::string workdir = "runs";    ///< resolved against the config file's folder
  double max_hours = 0;            ///< 0: no wall-time budget for the whole run
  int64_t max_experiments = 0;     ///< 0: no limit
  std::string git_remote;          ///< where kept commits are pushed (the run's branch); empty: nowhere
};

struct GpuConfig {
  int device = 0;
  std::string arch = "auto";       ///< "auto" (read off the device) or sm_NN / sm_NNa
  /// The GPUs the run uses, one worker each; empty: `device` alone.
  std::vector<int> devices;
  bool all_devices = false;        ///< devices = "all": every GPU the driver lists
  /// GPUs of different models: "refuse" (their times cannot be compared), or "per-kernel": each
  /// kernel stays on the model that measured its starter.
  std::string mixed_models = "refuse";
};

struct HarnessConfig {
  double stage_timeout_s = 60;     ///< watchdog limit for one stage of one candidate
  int warmup = 10;                 ///< launches before timing
  int repetitions = 100;           ///< timed launches; the median is reported
  /// A user type's baseline also times its module under torch.compile (minutes of autotuning at
  /// KernelBench's sizes); false: PyTorch eager alone.
  bool torch_compile = true;
  /// Variables the worker gets beyond the minimal environment (harness/process/worker_environment.hpp).
  std::vector<std::string> worker_env;
  /// A user type's launch plan: the most its scratch buffers may take together, in MiB.
  int64_t scratch_cap_mib = 16384;
  /// After each candidate's judged timing, one more launch reads the hardware counters
  /// (harness/judging/counters_pass.hpp) for the verdict, the results, the report and the proposers.
  bool counters = true;
  /// Also for a candidate its pairing does not show faster than the best: by default its counters
  /// are not read, since they change no decision, and the range profiler's passes hold the
  /// driver so that every other GPU's verdicts wait (docs/results.md, "Four GPUs").
  bool counters_for_all = false;
};

struct LlmConfig {
  ProviderKind provider = ProviderKind::Builtin;
  std::string model;
  std::string base_url;            ///< empty: the provider's public endpoint
  std::string api_key_env;         ///< name of the variable holding the key
  std::string api_key_file;        ///< or a file holding it (systemd LoadCredential=)
  double connect_timeout_s = 10;
  double request_timeout_s = 300;
  int max_retries = 5;
  int max_output_tokens = 16000;
  int64_t token_budget = 0;        ///< 0: unlimited
  double cost_budget_usd = 0;      ///< 0: unlimited
  double usd_per_mtok_input = 0;
  double usd_per_mtok_output = 0;
  int concurrency = 1;             ///< proposals asked for at once (several GPUs in flight)
  /// The most bytes of one prompt (system and message): the least useful parts are cut first.
  int64_t max_prompt_bytes = 100000;
  /// With an LLM: the builtin tuner's structure moves and knob sweeps take their turn too (on a
  /// new best, the tuner sweeps its knobs; the LLM edits otherwise).
  bool with_tuner = false;
};

struct TunerConfig {
  /// The builtin tuner first tries the knobs that address what the best's hardware counters say
  /// limits it (daemon/proposers/bottleneck.hpp); false: its playbook order alone, counters or not.
  bool order_by_counters = true;
};

struct ConvergenceConfig {
  int max_consecutive_reverts = 5;
  double peak_fraction = 0.90;
  double max_hours_per_kernel = 2.0;
  double target_speedup = 2.0;
  double keep_threshold = 0.01;    ///< a candidate must be this much faster to be kept
  /// A user type with no starter: the LLM's first files that may fail before the kernel ends.
  int first_candidate_tries = 5;
  /// Broken proposals in a row (a file that does not compile, a reply with no usable file) that
  /// end a kernel: counted apart from the reverts, so a model that writes broken files still stops.
  int max_broken_in_a_row = 8;
};

struct KernelEntry {
  std::string type;
  std::vector<int64_t> shape;
  std::string dtype = "fp16";
  double weight = 1.0;                  ///< share of the user's GPU time spent in this kernel
  std::optional<double> baseline_us;    ///< its time in the user's program today
  int line = 0;                         ///< where it stands in the file, for messages
  /// `spec = "path"`: the user type this kernel is of (docs/user-types.md), registered under
  /// `type`; null for a built-in type. Evaluation requests carry it (UserTypeSpec::to_json).
  std::shared_ptr<const UserTypeSpec> user_type;
};

struct Config {
  std::string path;                     ///< the file it was read from
  RunConfig run;
  GpuConfig gpu;
  HarnessConfig harness;
  LlmConfig llm;
  TunerConfig tuner;
  ConvergenceConfig convergence;
  std::vector<KernelEntry> kernels;

  /// The run directory: workdir/name, workdir taken relative to the config file.
  std::string run_dir() const;
};

/// Reads and checks a config file. Errors name file:line, the key and what was expected.
Result<Config> load_config(const std::string& path);
/// Same, from text (path is used in messages and to resolve relative paths).
Result<Config> parse_config(const std::string& text, const std::string& path);

}  // namespace ak
