#include <catch2/catch.hpp>

#include "daemon/loop/gpu_workers.hpp"

using namespace ak;

TEST_CASE("the devices come from [gpu] devices, all, or device, and a missing one is named", "[gpu-workers]") {
  GpuConfig g;
  g.device = 1;
  CHECK(*chosen_devices(g, 2) == std::vector<int>{1});
  g.devices = {0, 1};
  CHECK(*chosen_devices(g, 2) == std::vector<int>{0, 1});
  g.all_devices = true;
  CHECK(*chosen_devices(g, 4) == std::vector<int>{0, 1, 2, 3});
  CHECK_THAT(chosen_devices(g, 0).error().message, Catch::Contains("lists no GPU"));
  g.all_devices = false;
  g.devices = {0, 3};
  CHECK_THAT(chosen_devices(g, 2).error().message, Catch::Contains("asks for device 3, but the driver lists 2 GPU(s)"));
}

TEST_CASE("GPUs of different models are refused unless each kernel may stay on one model", "[gpu-workers]") {
  std::vector<GpuWorker> same{{0, "NVIDIA H200", nullptr}, {1, "NVIDIA H200", nullptr}};
  CHECK(check_models(same, "refuse").ok());
  std::vector<GpuWorker> mixed{{0, "NVIDIA H100 80GB HBM3", nullptr}, {1, "NVIDIA A100-SXM4-80GB", nullptr}};
  auto s = check_models(mixed, "refuse");
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.error().message, Catch::Contains("NVIDIA A100-SXM4-80GB (device 1)"));
  CHECK_THAT(s.error().message, Catch::Contains("mixed_models = \"per-kernel\""));
  CHECK(check_models(mixed, "per-kernel").ok());
}
