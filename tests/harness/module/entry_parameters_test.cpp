// The entry point's parameters checked against the ABI the harness passes.
#include <catch2/catch.hpp>

#include "harness/module/entry_parameters.hpp"
#include "kernels_cuda/registry.hpp"

using namespace ak;

TEST_CASE("the harness passes a pointer per buffer, 4 bytes per dimension, and the maps last", "[entry_parameters]") {
  CHECK(expected_parameter_sizes(matmul_v1_spec(), false) == std::vector<size_t>{8, 8, 8, 4, 4, 4});
  CHECK(expected_parameter_sizes(matmul_v1_spec(), true) == std::vector<size_t>{8, 8, 8, 4, 4, 4, 1088});
  CHECK(expected_parameter_sizes(matmul_spec(), true) == std::vector<size_t>{8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 1088});
  CHECK(expected_parameter_sizes(rmsnorm_spec(), false).back() == 4);   // eps, a float
}

TEST_CASE("an entry point with other parameters than the harness passes is refused saying what to write", "[entry_parameters]") {
  const auto& spec = matmul_v1_spec();
  const auto plain = expected_parameter_sizes(spec, false);
  const auto mapped = expected_parameter_sizes(spec, true);
  CHECK(parameter_mismatch(spec, false, plain, plain).empty());
  CHECK(parameter_mismatch(spec, true, mapped, mapped).empty());
  // Maps declared, but the entry point does not take them.
  CHECK_THAT(parameter_mismatch(spec, true, mapped, plain),
             Catch::Contains("takes 6 parameters; the harness passes 7") && Catch::Contains("1088 bytes"));
  // Maps taken, none declared.
  CHECK_THAT(parameter_mismatch(spec, false, plain, mapped), Catch::Contains("declares no ak_tensor_maps"));
  // A map parameter of another layout (four maps instead of eight).
  auto four = mapped;
  four.back() = 576;
  CHECK_THAT(parameter_mismatch(spec, true, mapped, four), Catch::Contains("parameter 7 (the tensor maps) is 576 bytes"));
  auto wide_m = plain;
  wide_m[3] = 8;   // a long long M
  CHECK_THAT(parameter_mismatch(spec, false, plain, wide_m), Catch::Contains("parameter 4 ('M') is 8 bytes"));
}
