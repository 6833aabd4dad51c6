#include "harness/judging/evaluation_seeds.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

namespace ak {

Result<uint64_t> csprng_u64() {
  uint64_t v = 0;
  auto* p = reinterpret_cast<unsigned char*>(&v);
  size_t got = 0;
  while (got < sizeof v) {
    const ssize_t n = getrandom(p + got, sizeof v - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return error(std::string("the operating system's random source (getrandom) failed: ") + std::strerror(errno));
    got += size_t(n);
  }
  return v;
}

uint64_t mix_seed(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Result<EvaluationSeeds> EvaluationSeeds::fresh() {
  EvaluationSeeds s;
  for (uint64_t* field : {&s.stage_inputs, &s.sampled_rows, &s.timing_inputs, &s.timing_choices}) {
    auto v = csprng_u64();
    if (!v) return v.error();
    *field = *v | 1;  // 0 means "draw one" where a seed is passed on
  }
  return s;
}

EvaluationSeeds EvaluationSeeds::from(uint64_t seed) {
  EvaluationSeeds s;
  s.stage_inputs = seed;
  s.sampled_rows = mix_seed(seed ^ 0x5a3b1e);
  s.timing_inputs = mix_seed(seed ^ 0x7a11);
  s.timing_choices = mix_seed(seed ^ 0xc4ec4ed);
  s.fixed = true;
  return s;
}

}  // namespace ak
