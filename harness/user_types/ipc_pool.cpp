#include "harness/user_types/ipc_pool.hpp"

#include <algorithm>
#include <utility>

#include "harness/gpu/allocation_slack.hpp"

#include "harness/gpu/cuda_driver.hpp"

namespace ak {

PoolLayout layout_pool(const std::vector<size_t>& tensor_bytes) {
  PoolLayout layout;
  size_t end = 0;
  for (size_t bytes : tensor_bytes) {
    const size_t offset = (end + kPoolAlignment - 1) / kPoolAlignment * kPoolAlignment;
    layout.slots.push_back({offset, bytes});
    end = offset + bytes;
  }
  layout.total_bytes = end;
  return layout;
}

nlohmann::json layout_json(const PoolLayout& layout) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : layout.slots) out.push_back({{"offset", s.offset}, {"bytes", s.bytes}});
  return out;
}

std::string handle_hex(const CUipcMemHandle& handle) {
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  for (char c : handle.reserved) {
    const auto b = static_cast<unsigned char>(c);
    hex += digits[b >> 4];
    hex += digits[b & 15];
  }
  return hex;
}

Result<IpcPool> IpcPool::allocate(size_t bytes, size_t granularity) {
  auto d = cuda_driver();
  if (!d) return d.error();
  IpcPool pool;
  // Whole pages (at least one, since cuMemAlloc of 0 bytes fails): the driver gives a smaller
  // allocation slack that no one writes, where a kernel could keep a byte between launches.
  pool.bytes_ = whole_pages(std::max(bytes, kPoolAlignment), granularity);
  if (auto s = cu_check((*d)->cuMemAlloc(&pool.base_, pool.bytes_),
                        "cuMemAlloc of the reference pool (" + std::to_string(pool.bytes_) + " bytes)");
      !s) {
    Error e = s.error();
    e.harness = true;
    return e;
  }
  CUipcMemHandle handle{};
  if (auto s = cu_check((*d)->cuIpcGetMemHandle(&handle, pool.base_), "cuIpcGetMemHandle of the reference pool"); !s)
    return s.error();  // pool's destructor frees the allocation
  pool.handle_ = handle_hex(handle);
  return pool;
}

IpcPool::IpcPool(IpcPool&& other) noexcept
    : base_(std::exchange(other.base_, 0)), bytes_(std::exchange(other.bytes_, 0)), handle_(std::move(other.handle_)) {}

IpcPool& IpcPool::operator=(IpcPool&& other) noexcept {
  if (this != &other) {
    release();
    base_ = std::exchange(other.base_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    handle_ = std::move(other.handle_);
  }
  return *this;
}

IpcPool::~IpcPool() { release(); }

void IpcPool::release() {
  if (!base_) return;
  if (auto d = cuda_driver(); d) (*d)->cuMemFree(base_);
  base_ = 0;
}

nlohmann::json IpcPool::map_request() const {
  return {{"op", "map_pool"}, {"handle", handle_}, {"bytes", bytes_}};
}

}  // namespace ak
