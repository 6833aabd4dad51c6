#pragma once
/// Compiled kernel files that the workers of one run share, as files in a folder of the run
/// (compiled/). A worker that judged a candidate fast enough to be kept leaves its compile there;
/// a worker asked to time a later candidate beside that best finds it instead of compiling it
/// again. Each worker's own CompiledBests (in memory) sits in front: this is what one worker
/// compiled and another needs. Measured cause: on four GPUs every new best was compiled again by
/// each worker that timed a candidate beside it, some 0.3 s inside the benchmark stage, whose
/// median went from 0.087 s on one GPU to 0.308 s on four (docs/results.md, "Four GPUs with the
/// compiled bests kept").
///
/// Trust: an entry is written only by a worker, from NVRTC's output for exactly the request it
/// holds (source, file name, instantiations, arch, NVRTC's version, the autokernel binary), and
/// /// read back only when every one of those is equal, compared whole, not by hash. A candidate's
/// code runs on the GPU and in the compile sandbox, neither of which can write the run folder. A
/// damaged entry is a miss.
#include <optional>
#include <string>

#include "common/result.hpp"
#include "harness/compile/nvrtc_compile.hpp"

namespace ak {

class SharedCompiles {
 public:
  /// `folder` empty: nothing is shared (load() misses, save() does nothing).
  explicit SharedCompiles(std::string folder) : folder_(std::move(folder)) {}

  /// The output kept for exactly this request, or nothing.
  std::optional<CompileOutput> load(const CompileRequest& req) const;
  /// Keeps `out` (a successful compile of `req`) for the other workers, written whole or not at
  /// all (write_file_atomic), so two workers saving the same request at once each leave a whole
  /// entry. Past kMaxEntries, the oldest entries are removed.
  Status save(const CompileRequest& req, const CompileOutput& out) const;

  /// A run of hours keeps a few hundred bests; a cubin of these kernels is tens of kilobytes.
  static constexpr size_t kMaxEntries = 512;

  /// The entry's file name for a request (a hash of it; the request itself is inside).
  static std::string entry_name(const CompileRequest& req);

 private:
  void remove_oldest() const;
  std::string folder_;
};

}  // namespace ak
