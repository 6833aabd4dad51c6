#pragma once
/// The pool: one device allocation of the worker that the reference process of a user type maps
/// through CUDA IPC (harness/user_types/reference_process.hpp). The reference process writes each launch's
/// inputs into it and reads the candidate's outputs from it; the worker launches the candidate on
/// it. It holds nothing the candidate may not see: inputs and the candidate's own outputs.
#include <cuda.h>

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace ak {

/// Where one tensor lies in the pool.
struct PoolSlot {
  size_t offset = 0;
  size_t bytes = 0;
};

struct PoolLayout {
  std::vector<PoolSlot> slots;  ///< one per tensor, in the order given
  size_t total_bytes = 0;       ///< what the pool must hold for them
};

/// Every offset is a multiple of this: the widest vector load a kernel makes and the alignment
/// cuMemAlloc gives, so a slot is as aligned as an allocation of its own.
inline constexpr size_t kPoolAlignment = 256;

/// Places tensors of `tensor_bytes` one after another, each at a kPoolAlignment-aligned offset.
PoolLayout layout_pool(const std::vector<size_t>& tensor_bytes);

/// [{"offset": .., "bytes": ..}, ...]: the layout as the reference process's prepare takes it.
nlohmann::json layout_json(const PoolLayout& layout);

/// The 64 bytes of an IPC handle as 128 lowercase hex digits.
std::string handle_hex(const CUipcMemHandle& handle);

/// The allocation and its IPC handle, freed on destruction. Needs a current context (the
/// worker's); stop the reference process, which has it mapped, before this is destroyed.
class IpcPool {
 public:
  /// At least `bytes`, in whole pages of `granularity`: the reference process writes every byte
  /// of the pool before each launch, so no slack after the layout's last tensor outlives one.
  /// A failure is the harness's (Error::harness).
  static Result<IpcPool> allocate(size_t bytes, size_t granularity);
  IpcPool(IpcPool&& other) noexcept;
  IpcPool& operator=(IpcPool&& other) noexcept;
  IpcPool(const IpcPool&) = delete;
  IpcPool& operator=(const IpcPool&) = delete;
  ~IpcPool();

  CUdeviceptr base() const { return base_; }
  size_t bytes() const { return bytes_; }
  CUdeviceptr at(const PoolSlot& slot) const { return base_ + slot.offset; }
  /// {"op":"map_pool","handle":..,"bytes":..}: the request that maps this pool.
  nlohmann::json map_request() const;
  const std::string& handle() const { return handle_; }

 private:
  IpcPool() = default;
  void release();
  CUdeviceptr base_ = 0;
  size_t bytes_ = 0;
  std::string handle_;
};

}  // namespace ak
