#include <catch2/catch.hpp>

#include "kernels_cuda/contract_version.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"

using namespace ak;

TEST_CASE("a file that declares no contract version follows version 1", "[contract]") {
  auto v = declared_contract_version("extern \"C\" __constant__ int ak_block_threads = 128;\n");
  REQUIRE(v);
  CHECK(*v == 1);
}

TEST_CASE("the contract version is read from its one-line declaration", "[contract]") {
  auto v = declared_contract_version("#include <cuda_fp16.h>\n  extern \"C\" __constant__ int ak_contract_version = 2;\n");
  REQUIRE(v);
  CHECK(*v == 2);
  auto first_line = declared_contract_version("extern \"C\" __constant__ const int ak_contract_version = 12;");
  REQUIRE(first_line);
  CHECK(*first_line == 12);
}

TEST_CASE("a version that cannot be read without compiling is refused with the form to write", "[contract]") {
  for (const char* src : {"extern \"C\" __constant__ int ak_contract_version = 1 + 1;\n",
                          "#define V 2\nextern \"C\" __constant__ int ak_contract_version = V;\n",
                          "// extern \"C\" __constant__ int ak_contract_version = 2; in a comment\n",
                          "extern \"C\" __constant__ int ak_contract_version = 0;\n"}) {
    INFO(src);
    auto v = declared_contract_version(src);
    REQUIRE_FALSE(v);
    CHECK(v.error().message.find("ak_contract_version") != std::string::npos);
  }
  auto twice = declared_contract_version("extern \"C\" __constant__ int ak_contract_version = 2;\n"
                                         "extern \"C\" __constant__ int ak_contract_version = 1;\n");
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message.find("twice") != std::string::npos);
}

TEST_CASE("a file is judged by the spec of the version it declares, and an unknown version names the known ones", "[contract]") {
  auto newest = spec_for_file("rotary_embedding", "extern \"C\" __constant__ int ak_contract_version = 2;\n");
  REQUIRE(newest);
  CHECK(*newest == find_spec("rotary_embedding"));
  auto older = spec_for_file("rotary_embedding", "// a file kept by an older build\n");
  REQUIRE(older);
  CHECK((*older)->contract_version == 1);
  CHECK((*older)->shape_names.size() == 4);
  auto unknown = spec_for_file("rotary_embedding", "extern \"C\" __constant__ int ak_contract_version = 7;\n");
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message.find("versions 1, 2") != std::string::npos);
  auto plain = spec_for_file("rmsnorm", "extern \"C\" __constant__ int ak_contract_version = 2;\n");
  REQUIRE_FALSE(plain);
  CHECK(plain.error().message.find("versions 1") != std::string::npos);
}

TEST_CASE("every starter and variant declares the newest version of its type's contract", "[contract]") {
  for (const KernelSpec* spec : all_specs())
    for (const KernelVariant& v : kernel_variants(spec->type)) {
      INFO(spec->type << " " << v.name);
      auto declared = declared_contract_version(*v.source);
      REQUIRE(declared);
      CHECK(*declared == spec->contract_version);
    }
}

TEST_CASE("the older specs keep their type's name and a version below the newest", "[contract]") {
  for (const KernelSpec* old : older_specs()) {
    INFO(old->type);
    const KernelSpec* newest = find_spec(old->type);
    REQUIRE(newest);
    CHECK(old->contract_version < newest->contract_version);
    CHECK(find_spec(old->type, old->contract_version) == old);
  }
}
