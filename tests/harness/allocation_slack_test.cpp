// The slack of the worker's allocations: whole pages, listed while they live, and on the GPU
// poisoned before every launch, so a byte past an operand's end keeps nothing between launches.
#include <catch2/catch.hpp>

#include "harness/allocation_slack.hpp"
#include "harness/gpu_context.hpp"
#include "harness/inputs.hpp"
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
  slack.remove(0x200000);
  CHECK(slack.with_slack() == 0);
}

TEST_CASE("a GPU allocation owns whole 2 MiB-aligned pages, and its slack is poisoned by a scrub", "[gpu][slack]") {
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
  const CudaDriver& d = (*gpu)->driver();
  std::vector<unsigned char> bytes(a->span(), 7);
  REQUIRE(d.cuMemcpyHtoD(a->ptr(), bytes.data(), bytes.size()) == CUDA_SUCCESS);
  REQUIRE((*gpu)->slack()->scrub(d, nullptr) == CUDA_SUCCESS);
  REQUIRE(d.cuCtxSynchronize() == CUDA_SUCCESS);
  REQUIRE(d.cuMemcpyDtoH(bytes.data(), a->ptr(), bytes.size()) == CUDA_SUCCESS);
  CHECK(bytes[0] == 7);                     // the operand is the harness's to fill
  CHECK(bytes[4] == kPoisonByte);           // the slack right after it
  CHECK(bytes.back() == kPoisonByte);       // and to the page's end
}
