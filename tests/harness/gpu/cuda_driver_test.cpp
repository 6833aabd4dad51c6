#include <catch2/catch.hpp>

#include <filesystem>

#include "harness/gpu/cuda_driver.hpp"

using namespace ak;

TEST_CASE("every driver function is looked up under a name the driver exports", "[driver]") {
  // The toolkit's stub libcuda exports the same names as the real driver.
  std::string stub = std::string(AK_CUDA_LIB_DIR) + "/stubs/libcuda.so";
  REQUIRE(std::filesystem::exists(stub));
  CHECK(missing_driver_symbols(stub) == "");
}

TEST_CASE("without a driver, GPU work is refused with a reason, not a crash", "[driver]") {
  auto d = cuda_driver();
  if (d.ok()) {
    std::printf("SKIPPED: no GPU check on a machine with a driver\n");
    return;
  }
  CHECK_THAT(d.error().message, Catch::Contains("no NVIDIA driver") && Catch::Contains("compile"));
}

TEST_CASE("sticky CUDA errors are told apart from ordinary ones", "[driver]") {
  CHECK(cu_error_is_sticky(CUDA_ERROR_ILLEGAL_ADDRESS));
  CHECK(cu_error_is_sticky(CUDA_ERROR_MISALIGNED_ADDRESS));
  CHECK_FALSE(cu_error_is_sticky(CUDA_ERROR_INVALID_VALUE));
  CHECK_FALSE(cu_error_is_sticky(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES));
}
