#pragma once
/// How much initialised data a compiled module carries: the bytes the driver copies to the GPU
/// when it loads the module (and the harness writes back before every launch), read from the
/// cubin's ELF section headers. A candidate can make this as large as it likes with one line
/// (`__device__ char big[1 << 28] = {1};`), so it is capped (compile_limits.hpp).
#include <cstdint>
#include <optional>
#include <vector>

namespace ak {

/// The total size of the cubin's loaded data sections that hold bytes of their own (allocated,
/// not code, not zero-filled: `.nv.global.init`, `.nv.constant*`, ...); nullopt for a cubin whose
/// ELF headers cannot be read.
std::optional<uint64_t> initialised_data_bytes(const std::vector<char>& cubin);

}  // namespace ak
