#pragma once
/// The reference of a user type as the worker uses it: one reference process per user type
/// (harness/user_types/reference_process.hpp), started at the type's first evaluation and kept up between
/// evaluations, with one pool (harness/user_types/ipc_pool.hpp) mapped into it that grows when a shape needs
/// more bytes. Each run is prepare (the process draws the inputs into the pool and poisons the
/// outputs) -> the candidate's launch on the pool's pointers -> check (the process compares).
/// The python it runs is $AK_REFERENCE_PYTHON, else "python3" (docs/user-types.md).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "harness/gpu/gpu_context.hpp"
#include "harness/module/run_buffers.hpp"
#include "harness/user_types/ipc_pool.hpp"
#include "harness/user_types/reference_process.hpp"
#include "kernels_cuda/user_type.hpp"

namespace ak {

/// The python that runs the reference process: $AK_REFERENCE_PYTHON, else "python3".
std::string reference_python();

/// The `load` request of a user type: its name, reference source, dims, fixed globals (as the
/// Python values the spec writes), tensors and the tolerance of each of its dtypes.
nlohmann::json load_request(const UserTypeSpec& spec, int device);

/// What the reference process said of the candidate's outputs at the last prepare.
struct UserCheck {
  bool pass = false;
  bool kernelbench_pass = false;   ///< within KernelBench's checker as well (atol = rtol: fp32 1e-4, fp16 and bf16 1e-2), against PyTorch as KernelBench runs it
  std::string message;             ///< why not, when not
};

/// The module's own times at a shape, in µs: eager PyTorch and torch.compile (0: not measured).
struct UserBaseline {
  double eager_us = 0, compile_us = 0;
  std::string compile_error;
};

/// The device buffers of one prepared run, in the spec's tensor order, as the launch takes them.
/// The buffers are views of the pool: they own nothing.
struct PreparedRun {
  std::vector<DeviceBuffer> inputs, outputs;   ///< inputs, parameters and buffers; then the outputs
  RunBuffers view() const;
  size_t bytes = 0;                            ///< what they take of the pool
  /// The pool's bytes that belong to no tensor: the alignment gaps between them and the tail up to
  /// the allocation's end. prepare writes them; a launch again on the same inputs (determinism)
  /// finds them poisoned again (poison_gaps), so no launch leaves anything there for the next.
  std::vector<std::pair<CUdeviceptr, size_t>> gaps;
  Status poison_gaps(const CudaDriver& d) const;
  std::string edge_inputs;                     ///< with an edge recipe: the inputs drawn, as the process says them
};

class UserReference {
 public:
  /// Starts the process for `spec` on `gpu`'s device (hello, then load). An Error that says what to
  /// install when python or torch is missing: the harness's problem, never the candidate's.
  static Result<std::unique_ptr<UserReference>> start(GpuContext& gpu, const UserTypeSpec& spec);
  ~UserReference();

  /// Draws new inputs for `shape` in `d` into the pool (growing it when needed), outputs poisoned;
  /// the pointers of every tensor in the spec's order. `scale` multiplies the float inputs (1: as
  /// get_inputs draws them); `edge` names an edge recipe that changes them (kEdgeRecipes, empty:
  /// none). The pool must not be in use by a kernel (synchronise first).
  Result<PreparedRun> prepare(const Shape& shape, DType d, double scale = 1, const std::string& edge = "");
  /// Judges the outputs now in the pool against the reference for the last prepare's inputs.
  /// The candidate's launch must have finished.
  Result<UserCheck> check();
  /// The module in eager PyTorch and under torch.compile at `shape` in `d`.
  Result<UserBaseline> baseline(const Shape& shape, DType d, int repetitions, bool with_compile = true);

  const UserTypeSpec& spec() const { return spec_; }
  /// False once a request failed in a way that stopped the process (a timeout, its death).
  bool running() const { return process_ && process_->running(); }
  size_t pool_bytes() const { return pool_ ? pool_->bytes() : 0; }

 private:
  UserReference(GpuContext& gpu, UserTypeSpec spec) : gpu_(gpu), spec_(std::move(spec)) {}
  Status ensure_pool(size_t bytes);
  GpuContext& gpu_;
  UserTypeSpec spec_;
  std::unique_ptr<ReferenceProcess> process_;
  std::optional<IpcPool> pool_;
};

}  // namespace ak
