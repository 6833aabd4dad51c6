// The launchers `autokernel export` generates (daemon/export/kernel_launcher.cpp) for the
// tensor-core types: the tile rule each writes (the spec's own grid, checked), the view of every
// buffer a tensor map may cover (the harness's view), and the launch through tiled_launch.h with
// the maps' parameter last; each file serving only its own tuned shape.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

#include "daemon/export/kernel_launcher.hpp"
#include "harness/module/tensor_maps.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"

using namespace ak;

namespace {

std::string variant_source(const std::string& type, const std::string& name) {
  for (auto& v : kernel_variants(type))
    if (v.name == name) return *v.source;
  FAIL("no variant " << name << " of " << type);
  return "";
}

/// Every shape a spec's stages run at.
std::vector<Shape> judged_shapes(const KernelSpec& spec) {
  std::vector<Shape> out{spec.smoke_shape, spec.stability_shape, spec.determinism_shape, spec.bench_shape};
  for (auto& s : spec.sweep_shapes) out.push_back(s);
  for (auto& s : spec.edge_shapes) out.push_back(s);
  return out;
}

int64_t product(const std::vector<int>& dims, const Shape& s) {
  int64_t p = 1;
  for (int d : dims) p *= s[size_t(d)];
  return p;
}

/// The launcher's `s` for shape `s` as an op passes it: the dimensions, then each computed int
/// argument (a stride, a flag) in the order of the arguments.
std::vector<int64_t> launcher_values(const KernelSpec& spec, const Shape& s) {
  std::vector<int64_t> out(s.begin(), s.end());
  for (const ArgSpec& a : spec.args)
    if (a.kind == ArgSpec::Dim && a.computed) out.push_back(a.computed(s));
  return out;
}

/// The row length the generated launcher computes for an extent at shape `s`.
int64_t launcher_cols(const KernelSpec& spec, const OperandExtent& e, const Shape& s) {
  return e.cols_at >= 0 ? launcher_values(spec, s).at(size_t(e.cols_at)) : product(e.cols, s);
}

/// A kernel file of flash_attention's contract version 1: its old TMA variant.
std::string test_v1_source() {
  std::ifstream in(AK_SOURCE_DIR "/tests/data/flash_attention_v1_tma_pingpong.cu");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("the tensor-core types at the versions the package has ops for are exportable, matmul's version 1 is not", "[export][launcher]") {
  CHECK(exportable(matmul_spec()));
  CHECK(exportable(fused_mlp_spec()));
  CHECK(exportable(flash_attention_spec()));
  CHECK(flash_attention_spec().contract_version == 2);
  CHECK(exportable(flash_attention_v1_spec()));
  CHECK_FALSE(exportable(matmul_v1_spec()));
  CHECK(exportable(rmsnorm_spec()));
  CHECK(tensor_core_type("matmul"));
  CHECK_FALSE(tensor_core_type("rmsnorm"));
}

TEST_CASE("the launcher's view of every mappable buffer is the harness's, at every shape the harness judged", "[export][launcher]") {
  for (const KernelSpec* spec : {&matmul_spec(), &fused_mlp_spec(), &flash_attention_spec(), &flash_attention_v1_spec()}) {
    if (!exportable(*spec)) continue;
    const auto extents = operand_extents(*spec);
    REQUIRE(extents.size() == spec->args.size());
    for (size_t i = 0; i < spec->args.size(); ++i) {
      const ArgSpec& a = spec->args[i];
      INFO(spec->type << " argument " << a.name);
      if (!a.is_buffer() || !a.row_length) {
        CHECK_FALSE(extents[i].has_value());
        continue;
      }
      REQUIRE(extents[i].has_value());
      for (const Shape& s : judged_shapes(*spec)) {
        INFO(shape_str(s));
        // The view the generated launcher computes from these products, against the harness's own.
        const TensorMapDecl m{int(i), 8, 8, 0, 0};
        for (DType d : spec->dtypes) {
          const TensorMapView harness = tensor_map_view(*spec, m, s, d);
          CHECK(uint64_t(launcher_cols(*spec, *extents[i], s)) == harness.cols);
          const size_t stored = a.elem == Elem::T ? dtype_size(d) : elem_size(a.elem, d);
          const ak_tensor_map_view launcher = ak_tensor_map_view_of(uint64_t(launcher_cols(*spec, *extents[i], s)),
                                                                    uint64_t(product(extents[i]->numel, s)), stored,
                                                                    harness.elem_bytes, harness.type);
          CHECK(launcher.rows == harness.rows);
        }
      }
    }
  }
}

TEST_CASE("a TMA matmul file's launcher reads its maps, clusters and persistent grid through tiled_launch.h", "[export][launcher]") {
  const std::string source = variant_source("matmul", "tma_warp_specialized");
  auto spec = spec_for_file("matmul", source);
  REQUIRE(spec.ok());
  REQUIRE((**spec).contract_version == 2);
  auto launcher = launcher_source(**spec, std::vector<TunedFile>{{source, "4096x2048x2048x0", "fp16"}});
  REQUIRE(launcher.ok());
  const std::string& text = *launcher;
  CHECK_THAT(text, Catch::Contains("#include \"tiled_launch.h\""));
  CHECK_THAT(text, Catch::Contains("const long long blocks = ak_tiled_blocks(s[0], s[1], m->tile_m, m->tile_n, 1);"));
  CHECK_THAT(text, Catch::Contains("autokernel_launch::pick_exact_file(s, 4,"));
  CHECK_THAT(text, Catch::Contains("if (file < 0) return \"no matmul file was measured faster at this shape\";"));
  CHECK_THAT(text, Catch::Contains("{4096, 2048, 2048, 0},  // 4096x2048x2048x0 fp16"));
  // x [M, K] and w [N, K] as rows of K in the call's dtype; y and the fp32 workspace as rows of N,
  // the workspace mapped in the call's dtype as the harness maps a scratch; the bias is no map's.
  CHECK_THAT(text, Catch::Contains("case 0:  // x\n      v = ak_tensor_map_view_of(s[2], s[0] * s[2], t, t, tt);"));
  CHECK_THAT(text, Catch::Contains("case 1:  // w\n      v = ak_tensor_map_view_of(s[2], s[1] * s[2], t, t, tt);"));
  CHECK_THAT(text, Catch::Contains("case 3:  // y\n      v = ak_tensor_map_view_of(s[1], s[0] * s[1], t, t, tt);"));
  CHECK_THAT(text, Catch::Contains("case 4:  // workspace\n      v = ak_tensor_map_view_of(s[1], s[0] * s[1], 4, t, tt);"));
  CHECK_THAT(text, !Catch::Contains("// bias\n"));
  // The ten arguments of version 2, then the slot for the maps' parameter.
  CHECK_THAT(text, Catch::Contains("  void* a0 = b[0];\n  void* a1 = b[1];\n  void* a2 = b[2];\n  void* a3 = b[3];\n"
                                   "  void* a4 = b[4];\n  void* a5 = b[5];\n  int a6 = (int)s[0];\n  int a7 = (int)s[1];\n"
                                   "  int a8 = (int)s[2];\n  int a9 = (int)s[3];\n"));
  CHECK_THAT(text, Catch::Contains("void* args[] = {&a0, &a1, &a2, &a3, &a4, &a5, &a6, &a7, &a8, &a9, nullptr};"));
  CHECK_THAT(text, Catch::Contains("autokernel_launch::launch_tiled(*m, entry_of_dtype[dtype], blocks, s, dtype, &operand_view, args,\n"
                                   "                                                        10, (CUstream)stream);"));
}

TEST_CASE("swiglu's launcher counts blocks by the rows alone in version 2 and by the leading dimensions in version 1", "[export][launcher]") {
  CHECK(exportable(swiglu_spec()));
  CHECK(grid_rule_call(swiglu_spec()) == "ak_first_dim_blocks(s, m->rows_per_block)");
  auto v2 = launcher_source(swiglu_spec(), swiglu_spec().starter_source());
  REQUIRE(v2.ok());
  CHECK_THAT(*v2, Catch::Contains("ak_first_dim_blocks(s, m->rows_per_block)"));
  CHECK(exportable(swiglu_v1_spec()));
  CHECK(grid_rule_call(swiglu_v1_spec()) == "ak_rowwise_blocks(s, 2, m->rows_per_block)");
  CHECK_THAT(launch_header({&swiglu_spec()}), Catch::Contains("#define AK_CONTRACT_VERSION_swiglu 2"));
  CHECK_THAT(launch_header({&swiglu_v1_spec()}), Catch::Contains("#define AK_CONTRACT_VERSION_swiglu 1"));
}

TEST_CASE("fused_mlp's and flash_attention's launchers write their own tile rules", "[export][launcher]") {
  auto mlp = launcher_source(fused_mlp_spec(), variant_source("fused_mlp", "tma_swiglu"));
  REQUIRE(mlp.ok());
  CHECK_THAT(*mlp, Catch::Contains("ak_tiled_blocks(s[0], s[2], m->tile_m, m->tile_n, 1) + ak_tiled_blocks(s[0], s[1], m->tile_m, m->tile_n, 1)"));
  // hidden, the fp32 scratch of M x I, is mapped in the call's dtype as rows of I.
  CHECK_THAT(*mlp, Catch::Contains("// hidden\n      v = ak_tensor_map_view_of(s[2], s[0] * s[2], 4, t, tt);"));
  auto v1 = launcher_source(flash_attention_v1_spec(), test_v1_source());
  REQUIRE(v1.ok());
  CHECK_THAT(*v1, Catch::Contains("ak_tiled_blocks(s[2], 1, m->tile_m, 1, s[0] * s[1])"));
  CHECK_THAT(*v1, Catch::Contains("case 0:  // q\n      v = ak_tensor_map_view_of(s[3], s[0] * s[1] * s[2] * s[3], t, t, tt);"));
}

TEST_CASE("a version-2 flash_attention launcher maps q, k, v and o as rows of the seq stride the op passes", "[export][launcher]") {
  const std::string source = variant_source("flash_attention", "tma_pingpong");
  auto spec = spec_for_file("flash_attention", source);
  REQUIRE(spec.ok());
  REQUIRE((**spec).contract_version == 2);
  auto launcher = launcher_source(**spec, std::vector<TunedFile>{{source, "2x16x4x2048x128x1x2", "fp16"}});
  REQUIRE(launcher.ok());
  const std::string& text = *launcher;
  // B * Hq * ceil(S / tile_m) blocks, the layout code compared with the rest (a file serves the
  // layout it was measured at), and each operand's seq stride from after the codes and the flag.
  CHECK_THAT(text, Catch::Contains("const long long blocks = ak_tiled_blocks(s[3], 1, m->tile_m, 1, s[0] * s[1]);"));
  CHECK_THAT(text, Catch::Contains("{2, 16, 4, 2048, 128, 1, 2},  // 2x16x4x2048x128x1x2 fp16"));
  CHECK_THAT(text, Catch::Contains("_compared[] = {true, true, true, true, true, true, true};"));
  CHECK_THAT(text, Catch::Contains("case 0:  // q\n      v = ak_tensor_map_view_of(s[10], s[0] * s[1] * s[3] * s[4], t, t, tt);"));
  CHECK_THAT(text, Catch::Contains("case 1:  // k\n      v = ak_tensor_map_view_of(s[13], s[0] * s[2] * s[3] * s[4], t, t, tt);"));
  CHECK_THAT(text, Catch::Contains("case 2:  // v\n      v = ak_tensor_map_view_of(s[16], s[0] * s[2] * s[3] * s[4], t, t, tt);"));
  CHECK_THAT(text, Catch::Contains("case 3:  // o\n      v = ak_tensor_map_view_of(s[19], s[0] * s[1] * s[3] * s[4], t, t, tt);"));
  // The causal flag, then the twelve strides.
  CHECK_THAT(text, Catch::Contains("  int a9 = (int)s[7];  // causal\n  int a10 = (int)s[8];  // q_stride_batch\n"));
  CHECK_THAT(text, Catch::Contains("  int a21 = (int)s[19];  // o_stride_seq\n"));
  // rotary's layout code stays out of its comparison: its op passes none.
  auto rotary = launcher_source(rotary_embedding_spec(), rotary_embedding_spec().starter_source());
  REQUIRE(rotary.ok());
  CHECK_THAT(*rotary, Catch::Contains("_compared[] = {true, true, true, true, true, false};"));
}

TEST_CASE("a tuned shape with a zero dimension (a Linear without bias) is a known shape, not an unknown one", "[export][launcher]") {
  CHECK(tuned_dimensions(matmul_spec(), "4096x2048x2048x0") == std::vector<long long>{4096, 2048, 2048, 0});
  CHECK(tuned_dimensions(matmul_spec(), "4096x2048x2048x1") == std::vector<long long>{4096, 2048, 2048, 1});
  CHECK(tuned_dimensions(matmul_spec(), "").empty());
  CHECK(tuned_dimensions(matmul_spec(), "4096x2048x2048").empty());      // a dimension short
  CHECK(tuned_dimensions(matmul_spec(), "4096x2048x2048x").empty());
  CHECK(tuned_dimensions(matmul_spec(), "4096x-2048x2048x0").empty());
  CHECK(tuned_dimensions(rmsnorm_spec(), "65536x128") == std::vector<long long>{65536, 128});
}

TEST_CASE("a row-wise launcher still refuses a file that declares maps, clusters or a persistent grid", "[export][launcher]") {
  std::string source = rmsnorm_spec().starter_source() + "\nextern \"C\" __constant__ int ak_persistent = 1;\n";
  auto r = launcher_source(rmsnorm_spec(), source);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("declares ak_persistent") && Catch::Contains("row-wise launchers"));
}
