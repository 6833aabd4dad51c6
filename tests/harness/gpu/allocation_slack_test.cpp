// The slack of the worker's allocations: whole pages, listed while they live, and on the GPU
// poisoned before every launch, so a byte past an operand's end keeps nothing between launches.
#include <catch2/catch.hpp>

#include "harness/gpu/allocation_slack.hpp"
#include "harness/gpu/gpu_context.hpp"
#include "harness/gpu/inputs.hpp"
#include "harness/module/device_checks.hpp"
#include "tests/support.hpp"

using namespace ak;

TEST_CASE("an allocation is made of whole pages, an empty one of one page", "[harness][slack]") {
  const size_t page = 2 << 20;
  CHECK(whole_pages(0, page) == page);
  CHECK(whole_pages(4, page) == page);
  CHECK(whole_pages(page, page) == page);
  CHECK(whole_pages(page + 1, page) == 2 * page);
  CHECK(whole_pages(100, 0) == 100);  // no granularity known: as asked
}

TEST_CASE("only allocations with slack are listed for the scrub, and only while they live", "[harness][slack]") {
  AllocationSlack slack;
  slack.add(0x200000, 4, 2 << 20);
  slack.add(0x400000, 2 << 20, 2 << 20);  // its operand fills it: nothing to scrub
  CHECK(slack.with_slack() == 1);
  const auto ranges = slack.ranges();
  REQUIRE(ranges.size() == 1);
  CHECK(ranges[0].first == 0x200000 + 4);
  CHECK(ranges[0].second == (2 << 20) - 4);
  slack.remove(0x200000);
  CHECK(slack.with_slack() == 0);
}

TEST_CASE("freed allocations are kept for the next of the same span, within their bounds", "[harness][slack]") {
  AllocationSlack slack;
  const size_t page = 2 << 20;
  CHECK(slack.take_kept(page) == 0);
  CHECK(slack.keep(0x200000, page).empty());
  REQUIRE(slack.ranges().size() == 1);          // kept, it is poisoned whole before every launch
  CHECK(slack.ranges()[0] == std::make_pair(CUdeviceptr(0x200000), page));
  CHECK(slack.take_kept(2 * page) == 0);        // another span: not this one
  CHECK(slack.take_kept(page) == 0x200000);
  CHECK(slack.take_kept(page) == 0);            // taken once
  CHECK(slack.ranges().empty());
  const CUdeviceptr huge = 0x4000000000;
  CHECK(slack.keep(huge, AllocationSlack::kKeptSpanBytes + page) == std::vector<CUdeviceptr>{huge});  // too large: free it
  CHECK(slack.drain_kept().empty());
}

TEST_CASE("a case's buffers freed and asked for again come back without the driver", "[harness][slack]") {
  // A verdict repeats its cases: the spans of one case, freed, serve the next verdict's same case.
  AllocationSlack slack;
  const size_t big = size_t(64) << 20, small = 2 << 20;
  CHECK(slack.keep(0x10000000, big).empty());
  CHECK(slack.keep(0x20000000, big).empty());
  CHECK(slack.keep(0x30000000, small).empty());
  CHECK(slack.take_kept(big) == 0x20000000);    // the one freed last first
  CHECK(slack.take_kept(small) == 0x30000000);
  CHECK(slack.take_kept(big) == 0x10000000);
  CHECK(slack.take_kept(big) == 0);
}

TEST_CASE("past the bound the allocations kept longest are handed back to be freed", "[harness][slack]") {
  AllocationSlack slack;
  const size_t span = AllocationSlack::kKeptSpanBytes;
  const size_t fit = AllocationSlack::kKeptBytes / span;
  for (size_t i = 0; i < fit; ++i) CHECK(slack.keep(CUdeviceptr(i + 1) << 32, span).empty());
  // One more: the first kept goes, and the newest stays.
  CHECK(slack.keep(CUdeviceptr(100) << 32, span) == std::vector<CUdeviceptr>{CUdeviceptr(1) << 32});
  CHECK(slack.ranges().size() == fit);
  size_t bytes = 0;
  for (auto& r : slack.ranges()) bytes += r.second;
  CHECK(bytes <= AllocationSlack::kKeptBytes);
  CHECK(slack.take_kept(span) == CUdeviceptr(100) << 32);
  CHECK(slack.drain_kept().size() == fit - 1);
  CHECK(slack.take_kept(span) == 0);
}

TEST_CASE("a GPU allocation owns whole 2 MiB-aligned pages, and its slack is poisoned before a launch", "[gpu][slack]") {
  if (!test::gpu_or_skip()) return;
  auto gpu = GpuContext::open(0);
  REQUIRE(gpu.ok());
  const size_t page = (*gpu)->info().allocation_granularity;
  REQUIRE(page >= 4096);
  auto a = (*gpu)->alloc(4), b = (*gpu)->alloc(4);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  // Before, two 4-byte buffers lay 512 bytes apart in one page, the bytes between them no one's.
  CHECK(a->ptr() % page == 0);
  CHECK(b->ptr() % page == 0);
  CHECK(a->span() == page);
  auto checks = DeviceChecks::open(**gpu);
  REQUIRE(checks.ok());
  const CudaDriver& d = (*gpu)->driver();
  std::vector<unsigned char> bytes(a->span(), 7);
  REQUIRE(d.cuMemcpyHtoD(a->ptr(), bytes.data(), bytes.size()) == CUDA_SUCCESS);
  REQUIRE((*checks)->poison_before_launch((*gpu)->slack().get()).ok());
  REQUIRE(d.cuCtxSynchronize() == CUDA_SUCCESS);
  REQUIRE(d.cuMemcpyDtoH(bytes.data(), a->ptr(), bytes.size()) == CUDA_SUCCESS);
  CHECK(bytes[0] == 7);                     // the operand is the harness's to fill
  CHECK(bytes[4] == kPoisonByte);           // the slack right after it
  CHECK(bytes.back() == kPoisonByte);       // and to the page's end
  // More live allocations than one launch of the poison takes: each gets its slack poisoned.
  std::vector<DeviceBuffer> many;
  for (size_t i = 0; i < DeviceChecks::kSlackRangesPerLaunch + 5; ++i) {
    auto b = (*gpu)->alloc(3);
    REQUIRE(b.ok());
    REQUIRE(d.cuMemsetD8(b->ptr(), 7, b->span()) == CUDA_SUCCESS);
    many.push_back(std::move(*b));
  }
  REQUIRE((*checks)->poison_before_launch((*gpu)->slack().get()).ok());
  REQUIRE(d.cuCtxSynchronize() == CUDA_SUCCESS);
  for (const DeviceBuffer& b : {std::cref(many.front()), std::cref(many.back())}) {
    unsigned char edge[2] = {};
    REQUIRE(d.cuMemcpyDtoH(edge, b.ptr() + 2, 2) == CUDA_SUCCESS);
    CHECK(edge[0] == 7);
    CHECK(edge[1] == kPoisonByte);
  }
}

TEST_CASE("a freed GPU buffer is kept and poisoned whole until the kept ones are released", "[gpu][slack]") {
  if (!test::gpu_or_skip()) return;
  auto gpu = GpuContext::open(0);
  REQUIRE(gpu.ok());
  CUdeviceptr at = 0;
  {
    auto a = (*gpu)->alloc(size_t(16) << 20);
    REQUIRE(a.ok());
    at = a->ptr();
    CHECK((*gpu)->slack()->ranges().empty());   // live and full: nothing to poison
  }
  const auto ranges = (*gpu)->slack()->ranges();
  REQUIRE(ranges.size() == 1);
  CHECK(ranges[0] == std::make_pair(at, size_t(16) << 20));   // freed: kept, poisoned whole
  {
    auto again = (*gpu)->alloc(size_t(16) << 20);
    REQUIRE(again.ok());
    CHECK(again->ptr() == at);                  // the same case again: no driver call
  }
  CHECK((*gpu)->release_kept() == 1);
  CHECK((*gpu)->slack()->ranges().empty());
  CHECK((*gpu)->release_kept() == 0);
}

TEST_CASE("an allocation the GPU cannot give is the harness's failure, saying how much is in use", "[gpu][blame]") {
  if (!test::gpu_or_skip()) return;
  auto gpu = GpuContext::open(0);
  REQUIRE(gpu.ok());
  auto huge = (*gpu)->alloc(size_t(1) << 50);   // a petabyte
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().harness);
  CHECK_THAT(huge.error().message, Catch::Contains("the harness's own failure, not the candidate's") && Catch::Contains("MiB of the GPU are in use"));
}
