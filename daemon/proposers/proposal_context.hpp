#pragma once
/// What a proposer is told about a kernel of a run, built from the run folder's records alone
/// (results.tsv, the candidates and their verdicts, state.json's device facts, the model's
/// notes): the loop builds it before each proposal, and `autokernel propose --run` builds the
/// same from a folder, also while the daemon works in it, to show the next prompt.
#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "daemon/proposers/model_notes.hpp"
#include "daemon/proposers/proposer.hpp"
#include "daemon/run_folder/kernel_progress.hpp"
#include "daemon/run_folder/results_table.hpp"

namespace ak {

/// The device a kernel is judged on, as its prompt states it.
struct DeviceFacts {
  std::string gpu, arch, unit;
  double peak = 0;
};

/// From the kernel's own verdicts; else from another kernel's on the same GPU model and resource
/// (a peak is the GPU's, not the kernel's); else the GPU's name as the driver gave it
/// (`gpu_models`, the run's workers), the unit the kernel's metric is measured in, and the peak
/// the harness measured on a GPU of that name before (cached_peak).
DeviceFacts device_facts(const std::vector<KernelProgress>& kernels, size_t index, const std::vector<std::string>& gpu_models);

/// The peak of `unit` ("GB/s" or "TFLOPS") the harness cached for a GPU named `gpu`
/// (harness/judging/device_peaks.hpp), when exactly one GPU of that name was measured; 0 otherwise.
double cached_peak(const std::string& gpu, const std::string& unit);

/// Everything a run folder holds that a proposal context is made of.
struct RunRecords {
  const Config* cfg = nullptr;
  std::string root;                          ///< the run folder
  const std::vector<ResultRow>* rows = nullptr;
  const std::vector<KernelProgress>* kernels = nullptr;
  const std::map<std::string, ModelNotes>* notes = nullptr;
  std::vector<std::string> gpu_models;
  long long next_experiment = 1;
};

/// The context of kernel `index`'s next proposal; `in_flight`: its candidates being judged now.
ProposalContext proposal_context(const RunRecords& run, size_t index, std::vector<PastExperiment> in_flight);

/// The context the daemon would build next for the kernel tagged `tag` of the run in `root`,
/// read without changing anything in the folder (a damaged results line is skipped, as status
/// skips it). An Error names what could not be read, or a tag the config does not list.
Result<ProposalContext> next_proposal_context(const Config& cfg, const std::string& root, const std::string& tag);

}  // namespace ak
