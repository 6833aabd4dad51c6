// Which of a type's exported files serves a call, by the call's shape. A run may keep several files
// of one type, each tuned at one shape (Qwen3's per-head norms over rows of 128 beside its decoder
// norms over rows of 2048): the package carries them all, and each launch takes the file tuned
// nearest the call. The rule, in order (docs/export.md states it):
//   1. fewest compared dimensions other than the first that differ from the call's: for the
//      row-wise types [rows, cols] a file tuned at the call's row length first, whatever its row
//      count (a row's length decides a row-wise kernel's structure; the row count only the grid);
//   2. then the smallest sum over the compared dimensions of |log2(call / tuned)|: the nearest
//      size, as a ratio (a file tuned at 16384 rows serves 8192 rows before one tuned at 65536);
//   3. then a file tuned in the call's dtype;
//   4. then the file listed first (the run's heaviest: export lists a type's files by weight).
// The exact tuned shape in the call's dtype is so always first. A file whose tuned shape is not
// known (a single file exported on its own) is compared on nothing and ranks after every known one.
// The tensor-core types (matmul, fused_mlp, flash_attention) take pick_exact_file instead: each of
// their files serves only the shape it was measured faster at.
// Written by autokernel export; pure arithmetic, no CUDA.
#pragma once
#include <cmath>

namespace autokernel_launch {

/// One file's rank for a call under the rule above: smaller is nearer.
struct FileDistance {
  int differing = 0;      ///< compared dimensions after the first that differ
  double log_ratio = 0;   ///< sum of |log2(call / tuned)| over the compared dimensions
  int other_dtype = 0;    ///< 1 when tuned in another dtype than the call's
  bool unknown = false;   ///< no tuned shape: after every file with one

  bool nearer_than(const FileDistance& o) const {
    if (unknown != o.unknown) return !unknown;
    if (differing != o.differing) return differing < o.differing;
    if (log_ratio != o.log_ratio) return log_ratio < o.log_ratio;
    return other_dtype < o.other_dtype;
  }
};

/// The distance of the call's shape (`dims` dimensions) and dtype code from one file's tuned shape
/// (tuned[0] < 0: not known) and dtype code (< 0: not known); `compared[d]` is false for a
/// dimension the rule ignores (rotary's layout code, which the op does not pass).
inline FileDistance file_distance(const long long* call, int dims, const long long* tuned, int tuned_dtype,
                                  const bool* compared, int dtype) {
  FileDistance d;
  if (dims > 0 && tuned[0] < 0) {
    d.unknown = true;
    return d;
  }
  for (int i = 0; i < dims; ++i) {
    if (!compared[i] || call[i] == tuned[i]) continue;
    if (i > 0) ++d.differing;
    d.log_ratio += call[i] > 0 && tuned[i] > 0 ? std::fabs(std::log2(double(call[i]) / double(tuned[i]))) : 64.0;
  }
  d.other_dtype = tuned_dtype >= 0 && tuned_dtype != dtype ? 1 : 0;
  return d;
}

/// The index of the file (of `files`, their tuned shapes row after row in `tuned`) nearest the call.
inline int pick_file(const long long* call, int dims, const long long* tuned, const int* tuned_dtype, const bool* compared,
                     int files, int dtype) {
  int best = 0;
  FileDistance best_distance;
  for (int f = 0; f < files; ++f) {
    const FileDistance d = file_distance(call, dims, tuned + f * dims, tuned_dtype[f], compared, dtype);
    if (f == 0 || d.nearer_than(best_distance)) best = f, best_distance = d;
  }
  return best;
}

/// The tensor-core types' rule: a file serves exactly the shape (every compared dimension) and
/// dtype it was measured faster than what it replaces at, and nothing else; a file of unknown
/// tuned shape (exported on its own, on the user's word) serves every call. The index of the first
/// such file, or -1: the op then runs PyTorch's own, which was as fast or faster there.
inline int pick_exact_file(const long long* call, int dims, const long long* tuned, const int* tuned_dtype,
                           const bool* compared, int files, int dtype) {
  int unknown = -1;
  for (int f = 0; f < files; ++f) {
    const long long* t = tuned + f * dims;
    if (dims > 0 && t[0] < 0) {
      if (unknown < 0) unknown = f;
      continue;
    }
    bool same = tuned_dtype[f] == dtype;
    for (int i = 0; i < dims && same; ++i) same = !compared[i] || call[i] == t[i];
    if (same) return f;
  }
  return unknown;
}

}  // namespace autokernel_launch
