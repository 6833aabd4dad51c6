#include <catch2/catch.hpp>

#include "harness/compile/kernel_contract.hpp"
#include "kernels_cuda/registry.hpp"

using namespace ak;

TEST_CASE("the starters keep the kernel contract", "[contract]") {
  for (auto* spec : all_specs()) {
    INFO(spec->type);
    CHECK(contract_violations(spec->starter_source(), *spec).empty());
  }
}

TEST_CASE("a file including a non-CUDA header breaks the contract on that line", "[contract]") {
  std::string src = rmsnorm_spec().starter_source();
  src = "#include <vector>\n#include \"helpers.cuh\"\n" + src;
  auto v = contract_violations(src, rmsnorm_spec());
  REQUIRE(v.size() == 2);
  CHECK_THAT(v[0], Catch::StartsWith("line 1: #include <vector>"));
  CHECK_THAT(v[1], Catch::StartsWith("line 2: #include \"helpers.cuh\""));
}

TEST_CASE("a file without the entry point or the launch constant says which is missing", "[contract]") {
  auto v = contract_violations("__global__ void other() {}\n", softmax_spec());
  REQUIRE(v.size() == 2);
  CHECK_THAT(v[0], Catch::Contains("'softmax_kernel' is missing") && Catch::Contains("softmax_kernel(const T* __restrict__ x"));
  CHECK_THAT(v[1], Catch::Contains("ak_block_threads"));
}

TEST_CASE("an empty file and host code are refused", "[contract]") {
  CHECK_THAT(contract_violations("  \n", softmax_spec()).at(0), Catch::Contains("empty"));
  std::string src = softmax_spec().starter_source() + "\nint main() { return 0; }\n";
  CHECK_THAT(contract_violations(src, softmax_spec()).at(0), Catch::Contains("main()"));
}

TEST_CASE("entry expressions name the template per dtype", "[contract]") {
  CHECK(entry_expression(rmsnorm_spec(), DType::BF16) == "rmsnorm_kernel<__nv_bfloat16>");
  CHECK(reference_expression(softmax_spec(), DType::F16, ReferenceOutput::Fp32) == "softmax_reference<__half, float>");
  CHECK(reference_expression(softmax_spec(), DType::BF16, ReferenceOutput::InputDtype) ==
        "softmax_reference<__nv_bfloat16, __nv_bfloat16>");
  CHECK(reference_expressions(rmsnorm_spec()).size() == 5);
}
