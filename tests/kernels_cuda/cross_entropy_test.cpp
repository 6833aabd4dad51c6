// cross_entropy's two contract versions: version 2 ignores rows whose target is -100 and gives NaN
// for any other target outside [0, classes); version 1 stays registered, unchanged, for the files
// written for it (tests/data/cross_entropy_v1.cu is the version-1 starter, byte for byte).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "harness/gpu/inputs.hpp"
#include "harness/compile/kernel_contract.hpp"
#include "harness/compile/nvrtc_compile.hpp"
#include "kernels_cuda/contract_version.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"
#include "tests/harness/evaluation/gpu_judge.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

std::string v1_starter() { return test::read_file(std::string(AK_SOURCE_DIR) + "/tests/data/cross_entropy_v1.cu"); }

std::vector<int64_t> targets(int64_t rows, int64_t classes, Fill fill, uint64_t seed) {
  auto bytes = make_input(DType::F16, rows, classes, fill, Recipe::Normal, seed);
  const auto* p = reinterpret_cast<const int64_t*>(bytes.data());
  return {p, p + rows};
}

const ArgSpec& target_arg(const KernelSpec& spec) { return spec.args.at(1); }

// Two rows of four classes: lse of row 0 is log 4, of row 1 lse(1, 2, 3, 4).
const std::vector<double> kLogits{0, 0, 0, 0, 1, 2, 3, 4};
const double kLse1 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(4.0));

}  // namespace

TEST_CASE("version 2's CPU reference gives an ignored row loss 0 and the mean over the rows kept", "[spec][cross_entropy]") {
  auto out = cross_entropy_spec().cpu_reference({2, 4}, DType::F32, {kLogits, {-100, 3}});
  CHECK(out[0][0] == 0);
  CHECK(out[0][1] == Approx(kLse1 - 4));
  CHECK(out[1][0] == Approx(kLse1 - 4));  // one row kept: its loss, not half of it
  auto both = cross_entropy_spec().cpu_reference({2, 4}, DType::F32, {kLogits, {1, 3}});
  CHECK(both[1][0] == Approx((std::log(4.0) + kLse1 - 4) / 2));
}

TEST_CASE("version 2 gives NaN for a target outside the classes that is not -100, and for a mean over no row", "[spec][cross_entropy]") {
  for (double bad : {-1.0, 4.0, 1000.0, 4294967296.0, -4294967396.0}) {
    INFO(bad);
    auto out = cross_entropy_spec().cpu_reference({2, 4}, DType::F16, {kLogits, {bad, 3}});
    CHECK(std::isnan(out[0][0]));
    CHECK(out[0][1] == Approx(kLse1 - 4));
    CHECK(std::isnan(out[1][0]));
  }
  auto none = cross_entropy_spec().cpu_reference({2, 4}, DType::BF16, {kLogits, {-100, -100}});
  CHECK(none[0] == std::vector<double>{0, 0});
  CHECK(std::isnan(none[1][0]));  // PyTorch's 0 / 0
}

TEST_CASE("cross_entropy version 1 stays registered with the same arguments and meaning", "[spec][cross_entropy]") {
  const KernelSpec& v1 = cross_entropy_v1_spec();
  const KernelSpec& v2 = cross_entropy_spec();
  CHECK(v1.contract_version == 1);
  CHECK(v2.contract_version == 2);
  CHECK(find_spec("cross_entropy") == &v2);
  CHECK(find_spec("cross_entropy", 1) == &v1);
  CHECK(find_spec("cross_entropy", 2) == &v2);
  CHECK(v1.abi() == v2.abi());  // the same entry point and arguments; only their meaning differs
  CHECK(target_arg(v1).fill_for(v1.bench_shape) == Fill::ClassIndex);
  CHECK(v1.bytes({8192, 32768}, DType::F16) == 2.0 * (8192.0 * 32768 + 8192 + 1) + 8.0 * 8192);
  CHECK(v1.edge_shapes.size() + 2 == v2.edge_shapes.size());
  // Version 1's mean is over every row: -100 is not a target it knows, so no row is left out.
  auto out = v1.cpu_reference({2, 4}, DType::F32, {kLogits, {1, 3}});
  CHECK(out[1][0] == Approx((std::log(4.0) + kLse1 - 4) / 2));
  CHECK(v1.starter_source().empty());  // the embedded starter is written for version 2

  auto old = spec_for_file("cross_entropy", v1_starter());
  REQUIRE(old.ok());
  CHECK(*old == &v1);
  auto now = spec_for_file("cross_entropy", v2.starter_source());
  REQUIRE(now.ok());
  CHECK(*now == &v2);
}

TEST_CASE("version 2's minimum bytes count the logits of the rows kept, 7 in 8", "[spec][cross_entropy]") {
  CHECK(cross_entropy_spec().bytes({8192, 32768}, DType::F16) == 2.0 * (7.0 / 8 * 8192 * 32768 + 8192 + 1) + 8.0 * 8192);
}

TEST_CASE("version 2's targets ignore about 1 row in 8, the first and last in some runs, from the seed", "[inputs][cross_entropy]") {
  const int64_t rows = 20000, classes = 37;
  auto t = targets(rows, classes, Fill::ClassIndexOrIgnored, 5);
  int64_t ignored = 0;
  std::set<int64_t> seen;
  for (int64_t v : t) {
    if (v == kIgnoredTarget) ++ignored;
    else REQUIRE((v >= 0 && v < classes));
    seen.insert(v);
  }
  CHECK(seen.size() == size_t(classes) + 1);
  CHECK(ignored > rows / 10);
  CHECK(ignored < rows / 6);
  CHECK(t == targets(rows, classes, Fill::ClassIndexOrIgnored, 5));
  CHECK(t != targets(rows, classes, Fill::ClassIndexOrIgnored, 6));
  // Over seeds, the first and the last row are each ignored in some runs and not in others.
  std::set<bool> first, last;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    auto s = targets(64, classes, Fill::ClassIndexOrIgnored, seed);
    first.insert(s.front() == kIgnoredTarget);
    last.insert(s.back() == kIgnoredTarget);
  }
  CHECK(first.size() == 2);
  CHECK(last.size() == 2);
}

TEST_CASE("one edge shape of version 2 ignores every row and one holds five invalid targets", "[inputs][cross_entropy]") {
  const KernelSpec& spec = cross_entropy_spec();
  std::vector<Fill> fills;
  for (const Shape& s : spec.edge_shapes) fills.push_back(target_arg(spec).fill_for(s));
  CHECK(std::count(fills.begin(), fills.end(), Fill::Ignored) == 1);
  CHECK(std::count(fills.begin(), fills.end(), Fill::ClassIndexOrInvalid) == 1);
  CHECK(target_arg(spec).fill_for(spec.bench_shape) == Fill::ClassIndexOrIgnored);
  for (int64_t v : targets(6, 100, Fill::Ignored, 3)) CHECK(v == kIgnoredTarget);
  std::set<int64_t> starts;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto t = targets(9, 50, Fill::ClassIndexOrInvalid, seed);
    std::set<int64_t> invalid;
    for (size_t r = 0; r < t.size(); ++r)
      if (t[r] != kIgnoredTarget && (t[r] < 0 || t[r] >= 50)) {
        invalid.insert(t[r]);
        if (t[r] == -1) starts.insert(int64_t(r));
      }
    // Every run holds all five, among them values whose low 32 bits read as a class (0) or as
    // -100: a kernel must compare all 64 bits.
    CHECK(invalid == std::set<int64_t>{-1, 50, 1050, int64_t(1) << 32, -(int64_t(1) << 32) - 100});
  }
  CHECK(starts.size() > 3);  // in rows the seed picks
}

TEST_CASE("every cross_entropy file declares version 2 and compiles under NVRTC, the version-1 starter as version 1", "[nvrtc][cross_entropy]") {
  auto compile = [](const KernelSpec& spec, const std::string& source) {
    for (const char* arch : {"sm_90a", "sm_80"}) {
      INFO(arch);
      CompileRequest r{source, "cross_entropy.cu", {}, arch};
      for (DType d : spec.dtypes) r.name_expressions.push_back(entry_expression(spec, d));
      auto out = nvrtc_compile(r);
      REQUIRE(out.ok());
      INFO(out->log);
      CHECK(out->ok);
      CHECK(out->functions.size() == spec.dtypes.size());
    }
  };
  auto files = kernel_variants("cross_entropy");
  REQUIRE(files.size() >= 2);
  for (auto& f : files) {
    INFO(f.name);
    CHECK(declared_contract_version(*f.source).value_or(0) == 2);
    compile(cross_entropy_spec(), *f.source);
  }
  CHECK(declared_contract_version(v1_starter()).value_or(0) == 1);
  compile(cross_entropy_v1_spec(), v1_starter());
  for (const KernelSpec* spec : {&cross_entropy_spec(), &cross_entropy_v1_spec()}) {
    CompileRequest r{spec->reference_source, "cross_entropy_reference.cu", reference_expressions(*spec), "sm_90a"};
    auto out = nvrtc_compile(r);
    REQUIRE(out.ok());
    INFO(out->log);
    CHECK(out->ok);
  }
}

TEST_CASE("the cross_entropy starter passes as version 2 and the version-1 starter still passes as version 1", "[gpu][cross_entropy]") {
  if (!test::gpu_or_skip()) return;
  Verdict now = test::judge(cross_entropy_spec(), cross_entropy_spec().starter_source());
  INFO(now.message);
  CHECK(now.correctness == Correctness::Pass);
  CHECK(now.stages.size() == 7);  // compile, five stages, benchmark
  Verdict old = test::judge(cross_entropy_v1_spec(), v1_starter());
  INFO(old.message);
  CHECK(old.correctness == Correctness::Pass);
  CHECK(old.stages.size() == 7);
  for (auto& f : kernel_variants("cross_entropy")) {
    Verdict v = test::judge(cross_entropy_spec(), *f.source);
    INFO(f.name << ": " << v.message);
    CHECK(v.correctness == Correctness::Pass);
  }
}

TEST_CASE("a version-2 file that counts ignored rows, or reads targets as 32 bits, fails", "[gpu][cross_entropy]") {
  if (!test::gpu_or_skip()) return;
  const std::string starter = cross_entropy_spec().starter_source();
  // The version-1 mean over every row, ignored ones included.
  Verdict all_rows = test::judge(cross_entropy_spec(), test::starter_with_text(starter, "kept += target[r] != -100;", "kept += 1;"));
  CHECK(all_rows.correctness == Correctness::Fail);
  // A target cut to an int: 2^32 reads as class 0, -2^32 - 100 as ignored; the edge stage's invalid row catches it.
  Verdict narrow = test::judge(cross_entropy_spec(),
                               test::starter_with_text(starter, "const long long tr = active ? target[row] : -100;",
                                                       "const long long tr = active ? (int)target[row] : -100;"));
  CHECK(narrow.correctness == Correctness::Fail);
  CHECK(narrow.failed_stage == "edge cases");  // the shape with the invalid targets
  // An ignored row's loss left unwritten (the poison): the reference's 0 is not NaN.
  Verdict unwritten = test::judge(cross_entropy_spec(), test::starter_with_text(starter, "if (active && lane == 0)", "if (active && lane == 0 && tr != -100)"));
  CHECK(unwritten.correctness == Correctness::Fail);
}
