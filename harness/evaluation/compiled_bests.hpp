#pragma once
/// The current bests a worker has compiled, to time each candidate beside its best without
/// compiling that best again. Keyed by the type, the arch and the whole source, so a kernel's
/// best is found whichever kernels the worker judged in between. One slot per type, as before,
/// recompiled the best at almost every verdict once a run had several kernels of one type: on a
/// box of four GPUs each worker takes whichever kernel is next, and the benchmark stage's median
/// went from 0.13 s on one GPU to 0.29 s, an NVRTC compile of the best inside it (docs/results.md,
/// "Four GPUs on the build of the buffers kept").
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "common/result.hpp"
#include "harness/compile/nvrtc_compile.hpp"

namespace ak {

class CompiledBests {
 public:
  /// The compiled output of `source` (of `type`, for `arch`): kept from an earlier call, or made
  /// by `compile` now and kept. An Error from `compile` is returned and nothing is kept. The
  /// pointer holds until a later find() pushes it out (kMaxKept are kept, the least recently
  /// found goes first).
  Result<const CompileOutput*> find(const std::string& type, const std::string& arch, const std::string& source,
                                    const std::function<Result<CompileOutput>()>& compile);
  size_t size() const { return kept_.size(); }
  /// Enough for every kernel of a large run (config/scaling.toml has 120), a cubin or two each.
  static constexpr size_t kMaxKept = 128;

 private:
  struct Kept {
    CompileOutput output;
    uint64_t last_found = 0;   ///< finds_ when it was last found: the smallest goes first
  };
  std::map<std::string, Kept> kept_;
  uint64_t finds_ = 0;
};

}  // namespace ak
