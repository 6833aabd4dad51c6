// kernels_cuda/grid_launch_rules.h, the cluster and persistent-grid rules the harness and every
// exported launcher share, with a stand-in driver table (no GPU): the checks, the blocks the GPU
// holds at once, and which launch call a clustered grid takes.
#include <catch2/catch.hpp>

#include "kernels_cuda/grid_launch_rules.h"
#include "kernels_cuda/grid_rules.h"

namespace {

/// The driver functions the rules call, answering what a test sets.
struct FakeDriver {
  static inline int clusters = 0, per_sm = 0, launches = 0, launches_ex = 0;
  static inline unsigned last_grid = 0, last_cluster = 0;
  static CUresult occupancy_clusters(int* n, CUfunction, const CUlaunchConfig* c) {
    last_cluster = c->attrs[0].value.clusterDim.x;
    *n = clusters;
    return CUDA_SUCCESS;
  }
  static CUresult occupancy_blocks(int* n, CUfunction, int, size_t) {
    *n = per_sm;
    return CUDA_SUCCESS;
  }
  static CUresult launch(CUfunction, unsigned gx, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**, void**) {
    ++launches;
    last_grid = gx;
    return CUDA_SUCCESS;
  }
  static CUresult launch_ex(const CUlaunchConfig* c, CUfunction, void**, void**) {
    ++launches_ex;
    last_grid = c->gridDimX;
    last_cluster = c->attrs[0].value.clusterDim.x;
    return CUDA_SUCCESS;
  }
  static CUresult error_string(CUresult, const char** s) {
    *s = "stand-in error";
    return CUDA_SUCCESS;
  }
  decltype(&occupancy_clusters) cuOccupancyMaxActiveClusters = &occupancy_clusters;
  decltype(&occupancy_blocks) cuOccupancyMaxActiveBlocksPerMultiprocessor = &occupancy_blocks;
  decltype(&launch) cuLaunchKernel = &launch;
  decltype(&launch_ex) cuLaunchKernelEx = &launch_ex;
  decltype(&error_string) cuGetErrorString = &error_string;
};

}  // namespace

TEST_CASE("cluster sizes outside 1 to 8, clusters before Hopper and a persistent flag other than 0 or 1 are refused", "[grid_launch_rules]") {
  CHECK(ak_grid_launch_problem(2, 1, 9).empty());
  CHECK_THAT(ak_grid_launch_problem(9, 0, 9), Catch::Contains("ak_cluster_blocks = 9") && Catch::Contains("1 to 8"));
  CHECK_THAT(ak_grid_launch_problem(2, 0, 8), Catch::Contains("compute capability 9.0"));
  CHECK_THAT(ak_grid_launch_problem(1, 3, 9), Catch::Contains("ak_persistent = 3"));
}

TEST_CASE("the blocks held at once are clusters times their size, or blocks per SM times the SMs", "[grid_launch_rules]") {
  FakeDriver d;
  long long n = 0;
  FakeDriver::clusters = 66;
  CHECK(ak_resident_blocks(d, nullptr, 2, 384, 200000, 132, "H100", n).empty());
  CHECK(n == 132);
  CHECK(FakeDriver::last_cluster == 2);
  FakeDriver::per_sm = 1;
  CHECK(ak_resident_blocks(d, nullptr, 1, 384, 200000, 132, "H100", n).empty());
  CHECK(n == 132);
  FakeDriver::clusters = 0;
  CHECK_THAT(ak_resident_blocks(d, nullptr, 4, 384, 230000, 132, "H100", n),
             Catch::Contains("a cluster of 4 blocks") && Catch::Contains("does not fit on H100"));
  FakeDriver::per_sm = 0;
  CHECK_THAT(ak_resident_blocks(d, nullptr, 1, 1024, 240000, 132, "H100", n), Catch::Contains("does not fit on one SM of H100"));
  // The persistent grid of grid_rules.h over what is held: 132 blocks for 1000 tiles.
  CHECK(ak_persistent_blocks(1000, 132, 2) == 132);
}

TEST_CASE("a clustered grid launches with cuLaunchKernelEx and the cluster size, a plain one with cuLaunchKernel", "[grid_launch_rules]") {
  FakeDriver d;
  FakeDriver::launches = FakeDriver::launches_ex = 0;
  CHECK(ak_launch_grid(d, nullptr, 2, 34, 384, 1024, nullptr, nullptr) == CUDA_SUCCESS);
  CHECK((FakeDriver::launches_ex == 1 && FakeDriver::launches == 0));
  CHECK((FakeDriver::last_grid == 34 && FakeDriver::last_cluster == 2));
  CHECK(ak_launch_grid(d, nullptr, 1, 33, 256, 0, nullptr, nullptr) == CUDA_SUCCESS);
  CHECK((FakeDriver::launches == 1 && FakeDriver::last_grid == 33));
}
