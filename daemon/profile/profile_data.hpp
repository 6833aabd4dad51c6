#pragma once
/// A profile of a CUDA program: its kernels grouped by name and ranked by GPU time, built from
/// the raw activity records the injection library (harness/gpu/profiler_injection.cpp) writes.
///
/// Raw records, one JSON object per line:
///   {"k":"kernel","name":M,"start":ns,"end":ns,"corr":C,"grid":[x,y,z],"block":[x,y,z],"regs":R,"smem":B}
///   {"k":"api","corr":C,"tid":T,"start":ns}                    a launch call on a CPU thread
///   {"k":"marker","id":I,"tid":T,"t":ns,"flag":"start"|"end","name":S}   NVTX ranges
///   {"k":"meta","gpu":S}
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace ak {

/// The launches of one GEMM kernel at one nn.Linear shape.
struct LinearGemm {
  std::vector<long long> shape;  ///< matmul's {M, N, K, has_bias}
  std::string dtype;             ///< of the Linear's input: fp16, bf16, fp32 or ""
  long long calls = 0;
  double total_us = 0;
};

struct ProfiledKernel {
  std::string name;            ///< demangled
  std::string type, bound;     ///< classify_kernel's answer
  long long calls = 0;
  double total_us = 0, mean_us = 0;
  double share = 0;            ///< of all GPU kernel time in the profile
  std::string nvtx;            ///< the enclosing NVTX range seen most often ("" without NVTX)
  std::vector<int> grid, block;
  int registers = 0, shared_bytes = 0;
  std::string dtype;           ///< from the name, "" when it says nothing
  /// A module candidate (profile --modules): the kernels one module class launched, added up.
  std::string module;          ///< its class or function name; "" for a kernel of its own
  std::vector<long long> shape;///< in the type's terms, from the module's inputs; empty when unknown
  std::vector<std::string> parts;  ///< the kernels inside it, largest first
  /// The CPU side of a module candidate's calls: the mean time from its range's push to its pop on
  /// the CPU (its forward's Python and launches, its children's included, with the profiler's own
  /// cost in it); the kernels of the row it launched per call (what its op replaces); and every
  /// kernel launched inside its range per call (a gated MLP's GEMMs, rows of their own, too). -1
  /// where the profile did not record them (profiles made before they were).
  double cpu_us_per_call = -1, launches_per_call = -1, range_launches_per_call = -1;
  /// A GEMM kernel launched by nn.Linear calls (profile --modules): its time at each Linear's GEMM
  /// shape (linear_gemm_shape), largest first; empty when no Linear range said its shape.
  std::vector<LinearGemm> linear_gemms;
};

struct Profile {
  std::string gpu;
  std::vector<std::string> command;
  double wall_seconds = 0;
  int exit_code = 0;
  double warmup_s = 0;
  double total_gpu_us = 0;
  long long kernels_seen = 0, kernels_dropped_in_warmup = 0;
  /// After the warm-up: the union of the kernels' intervals on the GPU, and the span from the first
  /// kernel's start to the last one's end (the GPU idled for the difference); -1 where not recorded.
  double gpu_busy_us = -1, gpu_span_us = -1;
  std::vector<ProfiledKernel> kernels;   ///< by total time, largest first
};

/// Aggregates raw records; kernels starting in the first `warmup_s` seconds are left out. A kernel
/// launched inside a module range that stands for one of autokernel's types (module_attribution.hpp)
/// counts toward that module's candidate instead of its own row. So does a kernel whose innermost
/// module range is a leaf module of none of autokernel's types, when the hook said it is a leaf and
/// no kernel inside that module is of one of autokernel's types: an "other" candidate, which
/// `plan --user-types` may offer as a user type.
Result<Profile> build_profile(const std::vector<nlohmann::json>& records, double warmup_s);
/// Reads a raw record file (JSON lines).
Result<std::vector<nlohmann::json>> read_records(const std::string& path);

void to_json(nlohmann::json& j, const Profile& p);
Result<Profile> profile_from_json(const nlohmann::json& j);
/// A profile file `autokernel profile` wrote; the Error names the file and what is wrong with it.
Result<Profile> read_profile(const std::string& path);

/// The ranked table a person reads: rank, share, total, calls, mean, type, name.
std::string profile_table(const Profile& p, size_t top);

/// The tensor shapes of a PyTorch NVTX range ("..., sizes = [[8, 1024, 768], [768]], ...") in
/// order; a tensor with no sizes (a scalar, an absent argument) is an empty shape.
std::vector<std::vector<long long>> nvtx_shapes(const std::string& range);
/// The first of them.
std::vector<long long> nvtx_first_shape(const std::string& range);

}  // namespace ak
