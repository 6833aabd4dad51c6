// Clusters and persistent grids: the checks and the grid rule, without a GPU.
#include <catch2/catch.hpp>

#include "harness/module/grid_launch.hpp"
#include "kernels_cuda/grid_rules.h"

using namespace ak;

TEST_CASE("a cluster size outside 1 to 8, or on a GPU before Hopper, is refused by name", "[grid_launch]") {
  CHECK(grid_launch_problem(1, 0, 8).empty());
  CHECK(grid_launch_problem(2, 1, 9).empty());
  CHECK(grid_launch_problem(8, 0, 9).empty());
  CHECK_THAT(grid_launch_problem(0, 0, 9), Catch::Contains("ak_cluster_blocks = 0"));
  CHECK_THAT(grid_launch_problem(16, 0, 9), Catch::Contains("1 to 8"));
  CHECK_THAT(grid_launch_problem(2, 0, 8), Catch::Contains("compute capability 9.0"));
  CHECK_THAT(grid_launch_problem(1, 2, 9), Catch::Contains("ak_persistent = 2"));
}

TEST_CASE("a clustered grid is rounded up to whole clusters", "[grid_launch]") {
  GridLaunch g;
  g.cluster_blocks = 2;
  CHECK(launch_blocks(g, DType::F16, 1) == 2);
  CHECK(launch_blocks(g, DType::F16, 33) == 34);
  CHECK(launch_blocks(g, DType::F16, 34) == 34);
  g.cluster_blocks = 1;
  CHECK(launch_blocks(g, DType::F16, 33) == 33);
  CHECK(launch_blocks(g, DType::F16, 0) == 0);   // no work: the launch refuses it, not a cluster
}

TEST_CASE("a persistent grid is what the GPU holds at once, never more than the work, in whole clusters", "[grid_launch]") {
  GridLaunch g;
  g.persistent = true;
  g.cluster_blocks = 2;
  g.resident_blocks[DType::F16] = 132;
  g.resident_blocks[DType::BF16] = 131;   // an odd count still launches whole clusters
  CHECK(launch_blocks(g, DType::F16, 512) == 132);
  CHECK(launch_blocks(g, DType::BF16, 512) == 130);
  CHECK(launch_blocks(g, DType::F16, 7) == 8);
  CHECK(launch_blocks(g, DType::F16, 1) == 2);
  g.cluster_blocks = 1;
  CHECK(launch_blocks(g, DType::F16, 1000) == 132);
  CHECK(launch_blocks(g, DType::F16, 5) == 5);
  // The rule an exported launcher copies: at least one cluster even when nothing is resident.
  CHECK(ak_persistent_blocks(100, 0, 4) == 4);
  CHECK(ak_cluster_rounded_blocks(9, 4) == 12);
}
