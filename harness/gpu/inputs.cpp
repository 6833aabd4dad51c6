#include "harness/gpu/inputs.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "harness/gpu/host_dtype.hpp"

namespace ak {
namespace {

constexpr int64_t kChunk = 1 << 16;  // fixed, so the values do not depend on the thread count

/// splitmix64: small, fast, and good enough for test inputs.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
  float normalish() {  // Irwin-Hall of 4, scaled to unit variance
    return (uniform() + uniform() + uniform() + uniform() - 2.0f) * 1.7320508f;
  }
  float sign() { return (next() & 1) ? 1.0f : -1.0f; }
};

float tiny_scale(DType d) { return d == DType::F16 ? 3e-6f : 1e-39f; }

float draw(Recipe r, DType d, Rng& rng, int64_t i, int64_t cols, float row_value, int64_t huge_col) {
  switch (r) {
    case Recipe::Normal: return rng.normalish();
    // Multiples of 32 (integers for mixed signs): every partial sum of a row is exact in fp32, so
    // any correct summation order gives the same answer and the comparison tests the kernel, not
    // the rounding of cancelling sums.
    case Recipe::NearMax: return rng.sign() * 32.0f * std::round(2047.0f * (0.5f + 0.49f * rng.uniform()));
    case Recipe::Tiny: return rng.normalish() * tiny_scale(d);
    case Recipe::OneHuge: return (i % cols == huge_col) ? 60000.0f * rng.sign() : rng.normalish();
    case Recipe::ConstantRows: return row_value;
    case Recipe::MixedSigns: return ((i & 1) ? 1.0f : -1.0f) * std::round(1.0f + 999.0f * rng.uniform());
    case Recipe::Large: return 16.0f * rng.normalish();
  }
  return 0;
}

bool is_target_fill(Fill f) {
  return f == Fill::ClassIndex || f == Fill::ClassIndexOrIgnored || f == Fill::Ignored || f == Fill::ClassIndexOrInvalid;
}

/// int64 targets per `fill` (spec.hpp). Which rows are ignored or invalid comes from the seed: the
/// first and last rows in some runs, and about one in eight of the others.
std::vector<char> class_indices(int64_t numel, int64_t classes, Fill fill, uint64_t seed) {
  std::vector<char> out(size_t(numel) * sizeof(int64_t));
  auto* idx = reinterpret_cast<int64_t*>(out.data());
  const uint64_t pick = Rng{seed ^ 0x5851f42d4c957f2dull}.next();
  const bool some_ignored = fill != Fill::ClassIndex;
  parallel_for(numel, [&](int64_t begin, int64_t end) {
    Rng rng{seed * 0x100000001b3ull + uint64_t(begin / kChunk) + 1};
    for (int64_t i = begin; i < end; ++i) {
      const uint64_t h = rng.next();
      const bool ignored = fill == Fill::Ignored ||
                           (some_ignored && ((h >> 61) == 0 || (i == 0 && (pick & 1)) || (i == numel - 1 && (pick & 2))));
      idx[i] = ignored ? kIgnoredTarget : int64_t(h % uint64_t(classes));
    }
  });
  if (fill == Fill::ClassIndexOrInvalid)
    for (int64_t k = 0; k < std::min<int64_t>(kInvalidTargets, numel); ++k)
      idx[(int64_t((pick >> 8) % uint64_t(numel)) + k) % numel] = invalid_target(int(k), classes);
  return out;
}

}  // namespace

int64_t invalid_target(int kind, int64_t classes) {
  switch (kind) {
    case 0: return -1;
    case 1: return classes;
    case 2: return classes + 1000;
    case 3: return int64_t(1) << 32;             // 0 to a kernel that keeps only the low 32 bits
    default: return -(int64_t(1) << 32) + kIgnoredTarget;  // -100 to one that does: not ignored
  }
}

const char* recipe_name(Recipe r) {
  switch (r) {
    case Recipe::Normal: return "normal";
    case Recipe::NearMax: return "near-max";
    case Recipe::Tiny: return "tiny/denormal";
    case Recipe::OneHuge: return "one-huge-per-row";
    case Recipe::ConstantRows: return "constant-rows";
    case Recipe::MixedSigns: return "mixed-signs";
    case Recipe::Large: return "large";
  }
  return "?";
}

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& f) {
  int64_t chunks = (n + kChunk - 1) / kChunk;
  int threads = int(std::min<int64_t>(chunks, std::max(1u, std::thread::hardware_concurrency())));
  if (threads <= 1) {
    if (n > 0) f(0, n);
    return;
  }
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int64_t c; (c = next.fetch_add(1)) < chunks;) f(c * kChunk, std::min(n, (c + 1) * kChunk));
    });
  for (auto& th : pool) th.join();
}

std::vector<char> make_input(DType d, int64_t numel, int64_t cols, Fill fill, Recipe recipe, uint64_t seed,
                             float scale) {
  if (is_target_fill(fill)) return class_indices(numel, cols, fill, seed);
  std::vector<char> out(size_t(numel) * dtype_size(d));
  // Whole rows per chunk would tie values to the row length; instead per-row values (the constant,
  // the huge column) come from a generator seeded by the row, per-element ones by the chunk.
  parallel_for(numel, [&](int64_t begin, int64_t end) {
    Rng rng{seed * 0x100000001b3ull + uint64_t(begin / kChunk) + 1};
    for (int64_t i = begin; i < end; ++i) {
      float v;
      if (fill == Fill::Weight) {
        v = 0.5f + rng.uniform();
      } else if (fill == Fill::Bias) {
        v = rng.uniform() - 0.5f;
      } else {
        Rng row{seed ^ (uint64_t(i / cols) * 0xd1342543de82ef95ull)};
        // A small integer: sums of equal integers are exact, so every correct summation order
        // gives the same mean (a constant row's deviations are then exactly zero).
        float row_value = std::round(row.normalish() * 3.0f);
        int64_t huge_col = int64_t(row.next() % uint64_t(cols));
        v = draw(fill == Fill::PlainData ? Recipe::Normal : recipe, d, rng, i, cols, row_value, huge_col);
        if (fill == Fill::FanIn) v *= scale;
      }
      store_from_float(out.data(), d, size_t(i), v);
    }
  });
  return out;
}

}  // namespace ak
