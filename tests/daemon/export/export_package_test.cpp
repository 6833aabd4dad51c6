// The package `autokernel export` writes: its files, its manifest and build metadata, and launchers
// that follow each type's spec (and compile, where nvcc is installed).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "common/file_text.hpp"
#include "daemon/export/export_package.hpp"
#include "daemon/export/kernel_launcher.hpp"
#include "daemon/export/op_namespace.hpp"
#include "harness/compile/candidate_compile.hpp"
#include "kernels_cuda/registry.hpp"
#include "kernels_cuda/variants.hpp"
#include "tests/support.hpp"

using namespace ak;

namespace {

ExportedKernel starter(const std::string& type) {
  return {type, "", "starter", find_spec(type)->starter_source(), "", "", 0, 0, 0};
}

ExportedKernel variant(const std::string& type, const std::string& name) {
  for (auto& v : kernel_variants(type))
    if (v.name == name) return {type, "", name, *v.source, "", "", 0, 0, 0};
  FAIL("no variant " << name << " of " << type);
  return {};
}

/// Whether the [gpu] tests that build the package's ops as extensions can run: a GPU, and a python3
/// with PyTorch and its extension builder; prints why not (ctest counts it skipped) otherwise.
bool gpu_torch_or_skip() {
  if (!test::gpu_or_skip()) return false;
  if (test::run_shell("python3 -c 'import torch, torch.utils.cpp_extension'").exit_code == 0) return true;
  std::printf("SKIPPED: no GPU with PyTorch here (python3 cannot import torch)\n");
  return false;
}

/// A kept file of a run folder: the variant of its type it holds, and its row of state.json (the
/// type, the tag it is kept under, the shape and dtype it was tuned at, its times).
struct KeptVariant {
  std::string variant, state_row;
};

/// A run folder as the loop leaves one: each kept file at run/kernels/<tag>.cu and state.json. The
/// times in the rows are made up (the export reads only that each file beat its library baseline at
/// its shape).
void write_run(const test::TempDir& run, const std::vector<KeptVariant>& kept) {
  std::filesystem::create_directories(run.path / "kernels");
  nlohmann::json state = {{"kernels", nlohmann::json::array()}};
  for (auto& k : kept) {
    auto row = nlohmann::json::parse(k.state_row);
    run.write("kernels/" + row["tag"].get<std::string>() + ".cu", variant(row["type"].get<std::string>(), k.variant).source);
    state["kernels"].push_back(row);
  }
  run.write("state.json", state.dump());
}

/// The package of a run folder as the loop leaves one (run/kernels/ and run/state.json), written to
/// `pkg`: every kept file read from the state, `kept` of them, packaged for PyTorch.
void package_run(const std::filesystem::path& run, size_t kept, const std::filesystem::path& pkg) {
  std::vector<std::string> left_out;
  auto files_of_run = kept_kernels(run.string(), false, left_out);
  REQUIRE(files_of_run.ok());
  REQUIRE(files_of_run->size() == kept);
  auto files = package_files(*files_of_run, PackageFormat::Torch, left_out);
  INFO((files.ok() ? std::string() : files.error().message));
  REQUIRE(files.ok());
  REQUIRE(write_package(*files, pkg.string()).ok());
}

/// The shell prefix that runs Python with the package under dir/pkg importable, from the source tree,
/// its extensions built in dir/ext.
std::string with_package(const test::TempDir& dir) {
  return "cd " + std::string(AK_SOURCE_DIR) + " && TORCH_EXTENSIONS_DIR=" + (dir.path / "ext").string() +
         " PYTHONPATH=" + (dir.path / "pkg").string();
}

/// `autokernel verify` of a model file with the package under dir/pkg, in fp16 (verify's own default,
/// the dtype the tensor-core tests' files are tagged with), eagerly and as CUDA graphs: checks that
/// the outputs agree (exit 0) and returns its report (dir/verify.json).
nlohmann::json verify_with_package(const test::TempDir& dir, const std::string& model) {
  auto v = test::run_shell(with_package(dir) + " " + test::autokernel_binary() + " verify --model " + model + " --ops " +
                           (dir.path / "pkg").string() + " --dtype fp16 --steps 6 --cuda-graphs --out " +
                           (dir.path / "verify.json").string() + " 2>&1");
  INFO(v.out);
  CHECK(v.exit_code == 0);
  return nlohmann::json::parse(test::read_file((dir.path / "verify.json").string()));
}

/// A verify report's served calls by replaced function ("torch.nn.functional.linear", a model class's
/// "<module>.<class>.forward"): its calls in one step, how many an op served, and by which file's tag.
std::map<std::string, nlohmann::json> served_by_function(const nlohmann::json& report) {
  std::map<std::string, nlohmann::json> served;
  for (auto& row : report["served"]["calls"]) served[row["name"].get<std::string>()] = row;
  return served;
}

}  // namespace

TEST_CASE("a package holds the compiled modules beside a launcher in its spec's argument order, and no kernel source", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({variant("rmsnorm", "row_in_registers"), starter("cross_entropy")}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  CHECK(left_out.empty());
  for (const char* f : {"pyproject.toml", "README.md", "autokernel_ops/__init__.py", "autokernel_ops/_load.py",
                        "autokernel_ops/_patch.py", "autokernel_ops/_replacements.py", "autokernel_ops/_fakes.py",
                        "autokernel_ops/_modules.py", "autokernel_ops/_compile_decision.py", "autokernel_ops/_timing.py",
                        "autokernel_ops/verify.py", "autokernel_ops/manifest.json", "autokernel_ops/csrc/common.h",
                        "autokernel_ops/csrc/launch.h", "autokernel_ops/csrc/grid_rules.h", "autokernel_ops/csrc/loaded_module.h",
                        "autokernel_ops/csrc/direct_call.h", "autokernel_ops/csrc/rotary_tables.h", "autokernel_ops/csrc/rmsnorm.cpp", "autokernel_ops/csrc/rmsnorm_launch.cpp",
                        "autokernel_ops/csrc/rmsnorm_module.h", "autokernel_ops/csrc/cross_entropy.cpp",
                        "autokernel_ops/csrc/cross_entropy_launch.cpp", "autokernel_ops/csrc/cross_entropy_module.h"})
    CHECK(files->count(f) == 1);
  for (auto& [path, text] : *files) {
    INFO(path);
    CHECK_FALSE((path.ends_with(".cu") || path.ends_with(".cuh")));
    CHECK_THAT(text, !Catch::Contains("__global__"));  // no kernel source anywhere
  }
  const std::string& launcher = files->at("autokernel_ops/csrc/rmsnorm_launch.cpp");
  CHECK_THAT(launcher, Catch::Contains("#include \"rmsnorm_module.h\""));
  CHECK_THAT(launcher, Catch::Contains("ak_rowwise_blocks(s, 2, m->rows_per_block)"));
  // x, weight, y, rows, cols, eps: the order of kernels_cuda/rmsnorm/rmsnorm_type.cpp.
  CHECK_THAT(launcher, Catch::Contains("  void* a0 = b[0];\n  void* a1 = b[1];\n  void* a2 = b[2];\n"
                                       "  int a3 = (int)s[0];\n  int a4 = (int)s[1];\n  float a5 = c[0];\n"
                                       "  void* args[] = {&a0, &a1, &a2, &a3, &a4, &a5};"));
  CHECK_THAT(launcher, Catch::Contains("entry_of_dtype[3] = {0, 1, 2}"));
  const std::string& module = files->at("autokernel_ops/csrc/rmsnorm_module.h");
  CHECK_THAT(module, Catch::Contains("{\"sm_90a\", krmsnorm_sm_90a, sizeof krmsnorm_sm_90a}"));
  CHECK_THAT(module, Catch::Contains("// rmsnorm_kernel<__half>") && Catch::Contains("// rmsnorm_kernel<float>"));
  CHECK_THAT(module, Catch::Contains("0x7f, 0x45, 0x4c, 0x46,"));  // an ELF image: the cubin
  // cross_entropy's int64 targets and uint32 counters are buffers like any other: pointers.
  const std::string& ce = files->at("autokernel_ops/csrc/cross_entropy_launch.cpp");
  CHECK_THAT(ce, Catch::Contains("  void* a1 = b[1];") && Catch::Contains("  void* a4 = b[4];"));
  CHECK_THAT(files->at("autokernel_ops/csrc/launch.h"), Catch::Contains("const char* launch_cross_entropy("));
  auto manifest = nlohmann::json::parse(files->at("autokernel_ops/manifest.json"));
  CHECK(manifest["schema"] == "autokernel-export-2");
  CHECK_THAT(manifest["driver_needs_cuda"].get<std::string>(), Catch::Matches(R"(\d+\.\d+)"));
  REQUIRE(manifest["ops"].size() == 2);
  CHECK(manifest["ops"][0]["type"] == "rmsnorm");
  CHECK(manifest["ops"][0]["structure"] == "row_in_registers");
  CHECK(manifest["ops"][0]["origin"] == "row_in_registers");
  CHECK_FALSE(manifest["ops"][0].contains("file"));
  REQUIRE(manifest["ops"][0]["modules"].size() == 1);
  CHECK(manifest["ops"][0]["modules"][0]["arch"] == "sm_90a");
  CHECK(manifest["ops"][0]["modules"][0]["bytes"].get<size_t>() > 1000);
  CHECK(manifest["ops"][0]["entries"].size() == 3);
}

TEST_CASE("every launcher has a load function the op registers, so that modules load at import, never inside a capture", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({starter("rmsnorm"), starter("softmax")}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  const std::string& header = files->at("autokernel_ops/csrc/launch.h");
  for (const char* t : {"rmsnorm", "softmax"}) {
    INFO(t);
    CHECK_THAT(header, Catch::Contains("const char* load_" + std::string(t) + "();"));
    // The same module object the launch uses: loading it is a lookup later, in the current context.
    CHECK_THAT(files->at("autokernel_ops/csrc/" + std::string(t) + "_launch.cpp"),
               Catch::Contains("const char* load_" + std::string(t) + "() {\n  const char* error = nullptr;\n"
                               "  for (autokernel_launch::Module* f : k" + std::string(t) + "_files)\n"
                               "    if (!f->current(error)) return error;\n  return nullptr;\n}"));
    CHECK_THAT(files->at("autokernel_ops/csrc/" + std::string(t) + ".cpp"), Catch::Contains("AK_LOAD_OP(" + std::string(t) + ")"));
  }
  CHECK_THAT(files->at("autokernel_ops/csrc/common.h"), Catch::Contains("#type \"_load(int device) -> ()\""));
  // __init__.py calls them at import for the current device.
  CHECK_THAT(files->at("autokernel_ops/__init__.py"), Catch::Contains("load_modules(torch.ops.autokernel, LOADED)"));
  CHECK_THAT(files->at("autokernel_ops/_modules.py"), Catch::Contains("getattr(ops, f\"{t}_load\")(int(device))"));
}

TEST_CASE("the rotary launcher passes q and k with the strides the op computes, after the shape, on q's and k's rows", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({starter("rotary_embedding")}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  const std::string& launcher = files->at("autokernel_ops/csrc/rotary_embedding_launch.cpp");
  CHECK_THAT(launcher, Catch::Contains("ak_rotary_blocks(s, m->rows_per_block)"));
  // q, k, cos, sin, q_out, k_out; batch, q_heads, k_heads, seq, head_dim; then 14 strides from s[6].
  CHECK_THAT(launcher, Catch::Contains("  void* a5 = b[5];\n  int a6 = (int)s[0];\n"));
  CHECK_THAT(launcher, Catch::Contains("  int a10 = (int)s[4];\n  int a11 = (int)s[6];  // q_stride_batch\n"));
  CHECK_THAT(launcher, Catch::Contains("  int a24 = (int)s[19];  // table_stride_seq\n"));
  const auto manifest = nlohmann::json::parse(files->at("autokernel_ops/manifest.json"));
  CHECK(manifest["ops"][0]["contract_version"] == 2);
  CHECK_THAT(files->at("autokernel_ops/csrc/rotary_embedding.cpp"),
             Catch::Contains("rotary_embedding(Tensor q, Tensor k, Tensor cos, Tensor sin) -> (Tensor, Tensor)"));
}

TEST_CASE("a rotary file of contract version 1, from an older run, exports with the op of its version", "[export]") {
  auto v1 = read_file_text(AK_SOURCE_DIR "/tests/data/rotary_embedding_v1.cu");
  REQUIRE(v1);
  std::vector<std::string> left_out;
  auto files = package_files({{"rotary_embedding", "", "kept.cu", *v1, "", "", 0, 0, 0}}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  const auto manifest = nlohmann::json::parse(files->at("autokernel_ops/manifest.json"));
  CHECK(manifest["ops"][0]["contract_version"] == 1);
  CHECK(manifest["ops"][0]["validated"]["shape_names"].size() == 4);
  CHECK_THAT(files->at("autokernel_ops/csrc/rotary_embedding.cpp"),
             Catch::Contains("rotary_embedding(Tensor q, Tensor cos, Tensor sin) -> Tensor"));
  CHECK_THAT(files->at("autokernel_ops/csrc/rotary_embedding_launch.cpp"), Catch::Contains("ak_rowwise_blocks(s, 4, m->rows_per_block)"));
  // The rotary class's tables are served whatever the version of the kept file.
  CHECK_THAT(files->at("autokernel_ops/csrc/rotary_embedding.cpp"), Catch::Contains("#include \"rotary_tables.h\""));
  CHECK_THAT(files->at("autokernel_ops/csrc/rotary_tables.h"),
             Catch::Contains("rotary_tables(Tensor inv_freq, Tensor position_ids, Tensor like, float scaling) -> (Tensor, Tensor)"));
}

TEST_CASE("a kept flash_attention file of version 2 exports the op of GQA views, one of version 1 its old op", "[export][flash_attention]") {
  ExportedKernel v2 = variant("flash_attention", "tma_pingpong");
  v2.tag = "attention", v2.shape = "2x16x4x2048x128x1x2", v2.dtype = "fp16";
  std::vector<std::string> left_out;
  auto files = package_files({v2}, PackageFormat::Torch, left_out);
  INFO((files.ok() ? std::string() : files.error().message));
  REQUIRE(files.ok());
  CHECK(left_out.empty());
  auto manifest = nlohmann::json::parse(files->at("autokernel_ops/manifest.json"));
  CHECK(manifest["ops"][0]["contract_version"] == 2);
  CHECK(manifest["ops"][0]["files"][0]["shape"] == "2x16x4x2048x128x1x2");
  CHECK(manifest["ops"][0]["validated"]["shape_names"].size() == 7);
  CHECK_THAT(files->at("autokernel_ops/csrc/launch.h"), Catch::Contains("#define AK_CONTRACT_VERSION_flash_attention 2\n"));
  const std::string& op = files->at("autokernel_ops/csrc/flash_attention.cpp");
  CHECK_THAT(op, Catch::Contains("flash_attention(Tensor q, Tensor k, Tensor v, bool causal) -> Tensor"));
  // The op passes the layout code it found and each operand's strides, which the launcher maps by.
  CHECK_THAT(op, Catch::Contains("pick_flash_attention(shape, dtype_code(q))") && Catch::Contains("launch_flash_attention("));
  CHECK_THAT(files->at("autokernel_ops/csrc/flash_attention_launch.cpp"),
             Catch::Contains("ak_tensor_map_view_of(s[10], s[0] * s[1] * s[3] * s[4], t, t, tt)"));
  CHECK_THAT(files->at("autokernel_ops/_fakes.py"), Catch::Contains("\"flash_attention\": lambda q, k, v, causal: _dense_like(q)"));

  // A file kept under version 1 (an older run's) exports as before: one head count, contiguous.
  ExportedKernel v1{"flash_attention", "old", "old.cu", test::read_file(AK_SOURCE_DIR "/tests/data/flash_attention_v1_tma_pingpong.cu"),
                    "4x32x4096x128", "fp16", 0, 0, 0};
  left_out.clear();
  auto old = package_files({v1}, PackageFormat::Torch, left_out);
  INFO((old.ok() ? std::string() : old.error().message));
  REQUIRE(old.ok());
  CHECK(nlohmann::json::parse(old->at("autokernel_ops/manifest.json"))["ops"][0]["contract_version"] == 1);
  CHECK_THAT(old->at("autokernel_ops/csrc/flash_attention.cpp"), Catch::Contains("flash_attention(Tensor q, Tensor k, Tensor v) -> Tensor"));
  CHECK_THAT(old->at("autokernel_ops/csrc/flash_attention_launch.cpp"),
             Catch::Contains("ak_tiled_blocks(s[2], 1, m->tile_m, 1, s[0] * s[1])") &&
                 Catch::Contains("ak_tensor_map_view_of(s[3], s[0] * s[1] * s[2] * s[3], t, t, tt)"));
  // One op per type: a version-1 file beside a version-2 one is left out, saying so.
  left_out.clear();
  auto both = package_files({v2, v1}, PackageFormat::Torch, left_out);
  REQUIRE(both.ok());
  REQUIRE(left_out.size() == 1);
  CHECK_THAT(left_out[0], Catch::Contains("old: follows version 1 of the flash_attention contract"));
}

TEST_CASE("swiglu's starter exports version 2, launched by rows alone, and a version-1 file its own version", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({starter("swiglu")}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  auto manifest = nlohmann::json::parse(files->at("autokernel_ops/manifest.json"));
  CHECK(manifest["ops"][0]["contract_version"] == 2);
  CHECK(manifest["ops"][0]["validated"]["shape_names"] == nlohmann::json::array({"rows", "cols", "ld"}));
  CHECK_THAT(files->at("autokernel_ops/csrc/launch.h"), Catch::Contains("#define AK_CONTRACT_VERSION_swiglu 2\n"));
  CHECK_THAT(files->at("autokernel_ops/csrc/swiglu_launch.cpp"), Catch::Contains("ak_first_dim_blocks(s, m->rows_per_block)"));
  // One op source for both versions: the strided operands under version 2, the dense ones under 1.
  CHECK_THAT(files->at("autokernel_ops/csrc/swiglu.cpp"), Catch::Contains("#if AK_CONTRACT_VERSION_swiglu >= 2"));
  ExportedKernel old{"swiglu", "", "kept.cu", test::read_file(AK_SOURCE_DIR "/tests/data/swiglu_v1.cu"), "", "", 0, 0, 0};
  auto then = package_files({old}, PackageFormat::Torch, left_out);
  REQUIRE(then.ok());
  CHECK(nlohmann::json::parse(then->at("autokernel_ops/manifest.json"))["ops"][0]["contract_version"] == 1);
  CHECK_THAT(then->at("autokernel_ops/csrc/launch.h"), Catch::Contains("#define AK_CONTRACT_VERSION_swiglu 1\n"));
  CHECK_THAT(then->at("autokernel_ops/csrc/swiglu_launch.cpp"), Catch::Contains("ak_rowwise_blocks(s, 2, m->rows_per_block)"));
}

/// `op` as the host compiler sees it under `version`: the blocks `#if AK_CONTRACT_VERSION_<type> < 2`
/// ... `#endif` dropped when version >= 2 (the only conditionals the op sources hold on the version).
std::string op_under_version(std::string op, const std::string& type, int version) {
  const std::string open = "#if AK_CONTRACT_VERSION_" + type + " < 2", close = "#endif";
  for (size_t at; version >= 2 && (at = op.find(open)) != std::string::npos;) {
    const size_t end = op.find(close, at);
    REQUIRE(end != std::string::npos);
    op.erase(at, end + close.size() - at);
  }
  return op;
}

TEST_CASE("the manifest and launch.h name the contract version of each exported file, and cross_entropy's op syncs only for version 1", "[export][cross_entropy]") {
  std::vector<std::string> left_out;
  auto now = package_files({starter("cross_entropy"), starter("softmax")}, PackageFormat::Torch, left_out);
  REQUIRE(now.ok());
  auto manifest = nlohmann::json::parse(now->at("autokernel_ops/manifest.json"));
  CHECK(manifest["ops"][0]["type"] == "cross_entropy");
  CHECK(manifest["ops"][0]["contract_version"] == 2);
  CHECK(manifest["ops"][1]["contract_version"] == 1);
  // Version 2 validated on its own stage shapes: the one of only ignored rows among them.
  const auto shapes = manifest["ops"][0]["validated"]["stage_shapes"].get<std::vector<std::string>>();
  CHECK(std::count(shapes.begin(), shapes.end(), "6x100") == 1);
  const std::string& header = now->at("autokernel_ops/csrc/launch.h");
  CHECK_THAT(header, Catch::Contains("#define AK_CONTRACT_VERSION_cross_entropy 2\n") &&
                         Catch::Contains("#define AK_CONTRACT_VERSION_softmax 1\n"));
  const std::string& op = now->at("autokernel_ops/csrc/cross_entropy.cpp");
  CHECK_THAT(op, Catch::Contains(".item<bool>()"));  // version 1's check, still there for version-1 files
  const std::string v2 = op_under_version(op, "cross_entropy", 2);
  CHECK_THAT(v2, !Catch::Contains(".item") && !Catch::Contains("ynchronize") && !Catch::Contains(".any()") &&
                     !Catch::Contains(".cpu()") && Catch::Contains("launch_cross_entropy("));

  // A kept file of version 1 exports as version 1: its own spec, its checked op.
  ExportedKernel old{"cross_entropy", "", "starter", test::read_file(std::string(AK_SOURCE_DIR) + "/tests/data/cross_entropy_v1.cu"),
                     "", "", 0, 0, 0};
  auto then = package_files({old}, PackageFormat::Torch, left_out);
  REQUIRE(then.ok());
  CHECK(nlohmann::json::parse(then->at("autokernel_ops/manifest.json"))["ops"][0]["contract_version"] == 1);
  CHECK_THAT(then->at("autokernel_ops/csrc/launch.h"), Catch::Contains("#define AK_CONTRACT_VERSION_cross_entropy 1\n"));
  const auto v1_shapes = nlohmann::json::parse(then->at("autokernel_ops/manifest.json"))["ops"][0]["validated"]["stage_shapes"];
  CHECK(v1_shapes.size() + 2 == shapes.size());
}

TEST_CASE("a package carries one module per architecture asked for", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({starter("softmax")}, PackageFormat::Torch, left_out, {"sm_90a", "sm_80"});
  REQUIRE(files.ok());
  const std::string& module = files->at("autokernel_ops/csrc/softmax_module.h");
  CHECK_THAT(module, Catch::Contains("{\"sm_90a\", ksoftmax_sm_90a,") && Catch::Contains("{\"sm_80\", ksoftmax_sm_80,"));
  auto manifest = nlohmann::json::parse(files->at("autokernel_ops/manifest.json"));
  CHECK(manifest["ops"][0]["modules"].size() == 2);
  auto odd = package_files({starter("softmax")}, PackageFormat::Torch, left_out, {"sm_90a\"; int x;"});
  REQUIRE_FALSE(odd.ok());
  CHECK_THAT(odd.error().message, Catch::Contains("expected a GPU architecture"));
}

TEST_CASE("a file the harness would refuse is not exported, and the error says why", "[export]") {
  ExportedKernel k = starter("rmsnorm");
  k.origin = "printing.cu";
  // Output the harness does not judge: device printf is refused by the compile step.
  k.source += "\n__device__ __noinline__ void ak_say(int v) { printf(\"%d\\n\", v); }\n"
              "extern \"C\" __global__ void ak_speaker(int v) { ak_say(v); }\n";
  std::vector<std::string> left_out;
  auto files = package_files({k}, PackageFormat::Torch, left_out);
  REQUIRE_FALSE(files.ok());
  CHECK_THAT(files.error().message, Catch::Contains("printing.cu") && Catch::Contains("the harness refuses it for sm_90a"));
}

TEST_CASE("the grid rule a package carries is the harness's own", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({starter("softmax")}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  CHECK(files->at("autokernel_ops/csrc/grid_rules.h") == test::read_file(AK_SOURCE_DIR "/kernels_cuda/grid_rules.h"));
}

TEST_CASE("the tensor-map and cluster rules a package carries are byte for byte the headers the harness compiles", "[export]") {
  std::vector<std::string> left_out;
  for (auto format : {PackageFormat::Torch, PackageFormat::HfKernels}) {
    auto files = package_files({starter("softmax")}, format, left_out);
    REQUIRE(files.ok());
    const std::string csrc = format == PackageFormat::Torch ? "autokernel_ops/csrc/" : "autokernel_ops_cuda/";
    CHECK(files->at(csrc + "tensor_map_rules.h") == test::read_file(AK_SOURCE_DIR "/kernels_cuda/tensor_map_rules.h"));
    CHECK(files->at(csrc + "grid_launch_rules.h") == test::read_file(AK_SOURCE_DIR "/kernels_cuda/grid_launch_rules.h"));
  }
  // And those are the headers harness/module/tensor_maps.cpp and harness/module/grid_launch.cpp include.
  CHECK_THAT(test::read_file(AK_SOURCE_DIR "/harness/module/tensor_maps.hpp"), Catch::Contains("#include \"kernels_cuda/tensor_map_rules.h\""));
  CHECK_THAT(test::read_file(AK_SOURCE_DIR "/harness/module/grid_launch.cpp"), Catch::Contains("#include \"kernels_cuda/grid_launch_rules.h\""));
}

TEST_CASE("a tensor-core file at a contract version the package has no op for is left out with the reason", "[export]") {
  ExportedKernel v1{"matmul", "", "matmul_v1.cu", test::read_file(AK_SOURCE_DIR "/tests/data/matmul_v1.cu"), "", "", 0, 0, 0};
  std::vector<std::string> left_out;
  auto files = package_files({v1, starter("softmax")}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  REQUIRE(left_out.size() == 1);
  CHECK_THAT(left_out[0], Catch::Contains("matmul version 1 is not exported") && Catch::Contains("matmul version 2"));
  CHECK(files->count("autokernel_ops/csrc/matmul_launch.cpp") == 0);
  left_out.clear();
  auto none = package_files({v1}, PackageFormat::Torch, left_out);
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.error().message, Catch::Contains("nothing to export"));
}

TEST_CASE("a kept matmul and fused_mlp export with their ops, the tile launcher and the harness's rule headers", "[export]") {
  ExportedKernel gemm = variant("matmul", "tma_warp_specialized"), mlp = variant("fused_mlp", "tma_swiglu");
  gemm.tag = "q_proj", gemm.shape = "4096x2048x2048x0", gemm.dtype = "fp16";
  mlp.tag = "mlp", mlp.shape = "4096x2048x6144", mlp.dtype = "fp16";
  std::vector<std::string> left_out;
  auto files = package_files({gemm, mlp}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  CHECK(left_out.empty());
  for (const char* f : {"autokernel_ops/csrc/matmul.cpp", "autokernel_ops/csrc/matmul_launch.cpp", "autokernel_ops/csrc/fused_mlp.cpp",
                        "autokernel_ops/csrc/fused_mlp_launch.cpp", "autokernel_ops/csrc/tiled_launch.h"})
    CHECK(files->count(f) == 1);
  CHECK_THAT(files->at("autokernel_ops/csrc/matmul.cpp"), Catch::Contains("matmul(Tensor x, Tensor weight, Tensor? bias) -> Tensor"));
  CHECK_THAT(files->at("autokernel_ops/csrc/launch.h"), Catch::Contains("#define AK_CONTRACT_VERSION_matmul 2"));
  auto manifest = nlohmann::json::parse(files->at("autokernel_ops/manifest.json"));
  CHECK(manifest["ops"][0]["type"] == "matmul");
  CHECK(manifest["ops"][0]["files"][0]["shape"] == "4096x2048x2048x0");
}

TEST_CASE("a kernel file that exports no ak_block_threads is refused by name", "[export]") {
  ExportedKernel k = starter("rmsnorm");
  k.origin = "broken.cu";
  k.source = std::regex_replace(k.source, std::regex("ak_block_threads"), "threads_per_block");
  std::vector<std::string> left_out;
  auto files = package_files({k}, PackageFormat::Torch, left_out);
  REQUIRE_FALSE(files.ok());
  CHECK_THAT(files.error().message, Catch::Contains("broken.cu") && Catch::Contains("exports no ak_block_threads"));
}

TEST_CASE("a row-wise kernel file that asks for a persistent grid or clusters is not exported, saying why", "[export]") {
  for (const char* symbol : {"ak_persistent", "ak_cluster_blocks"}) {
    ExportedKernel k = starter("rmsnorm");
    k.origin = "persistent.cu";
    k.source += std::string("\nextern \"C\" __constant__ int ") + symbol + " = 1;\n";
    std::vector<std::string> left_out;
    auto files = package_files({k}, PackageFormat::Torch, left_out);
    REQUIRE_FALSE(files.ok());
    CHECK_THAT(files.error().message, Catch::Contains(symbol) && Catch::Contains("row-wise launchers do not provide"));
  }
}

TEST_CASE("a run's kept kernels are read from its state, every file of a type (the heaviest first), a slower one only when asked", "[export]") {
  test::TempDir run;
  std::filesystem::create_directories(run.path / "kernels");
  run.write("kernels/norm_a.cu", "// a\n");
  run.write("kernels/norm_b.cu", "// b\n");
  run.write("kernels/rope.cu", "// rope\n");
  run.write("kernels/soft.cu", "// softmax\n");
  run.write("state.json", R"({"kernels": [
    {"tag": "norm_b", "type": "rmsnorm", "shape": "8x2048", "dtype": "fp16", "weight": 0.01, "baseline_us": 5, "best_us": 4, "speedup": 1.25},
    {"tag": "rope", "type": "rotary_embedding", "shape": "2x16x2048x128", "dtype": "fp16", "weight": 0.1, "baseline_us": 60, "best_us": 20, "speedup": 3},
    {"tag": "norm_a", "type": "rmsnorm", "shape": "4096x2048", "dtype": "fp16", "weight": 0.05, "baseline_us": 40, "best_us": 10, "speedup": 4},
    {"tag": "soft", "type": "softmax", "shape": "98304x512", "dtype": "fp16", "weight": 0.13, "baseline_us": 85.6, "best_us": 88.0, "speedup": 0.973}]})");
  std::vector<std::string> left_out;
  auto kept = kept_kernels(run.path.string(), false, left_out);
  REQUIRE(kept.ok());
  REQUIRE(kept->size() == 3);
  // Types in name order; a type's files by weight, the heaviest first (file_pick.h's last tie-break).
  CHECK((*kept)[0].tag == "norm_a");
  CHECK((*kept)[0].source == "// a\n");
  CHECK((*kept)[0].speedup == 4);
  CHECK((*kept)[1].tag == "norm_b");
  CHECK((*kept)[1].shape == "8x2048");
  CHECK((*kept)[2].type == "rotary_embedding");
  REQUIRE(left_out.size() == 1);
  CHECK_THAT(left_out[0], Catch::StartsWith("soft: 0.973x its baseline, slower"));
  left_out.clear();
  auto all = kept_kernels(run.path.string(), true, left_out);
  REQUIRE(all.ok());
  CHECK(all->size() == 4);
  left_out.clear();
  // A kernel whose starter failed keeps no file: left out with the run's reason, the rest export.
  run.write("state.json", R"({"kernels": [
    {"tag": "norm_a", "type": "rmsnorm", "shape": "4096x2048", "dtype": "fp16", "weight": 0.05, "speedup": 4},
    {"tag": "gone", "type": "matmul", "shape": "64x64x64x0", "dtype": "fp32", "converged": "the starter itself fails: shape sweep"}]})");
  auto partial = kept_kernels(run.path.string(), false, left_out);
  REQUIRE(partial.ok());
  CHECK(partial->size() == 1);
  REQUIRE(left_out.size() == 1);
  CHECK_THAT(left_out[0], Catch::StartsWith("gone: the run kept no file (the starter itself fails: shape sweep)"));
  auto missing = kept_kernels((run.path / "nope").string(), false, left_out);
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains("not a run folder"));
}

TEST_CASE("a tensor-core file is kept only where it was measured faster than the library it replaces", "[export]") {
  test::TempDir run;
  std::filesystem::create_directories(run.path / "kernels");
  for (const char* t : {"q_proj", "o_proj", "up_proj", "mlp"}) run.write(std::string("kernels/") + t + ".cu", "// k\n");
  run.write("state.json", R"({"kernels": [
    {"tag": "q_proj", "type": "matmul", "shape": "4096x2048x2048x0", "dtype": "fp16", "weight": 0.1, "baseline_us": 50, "best_us": 45, "speedup": 1.11, "baseline": "cuBLAS"},
    {"tag": "o_proj", "type": "matmul", "shape": "4096x2048x2048x0", "dtype": "bf16", "weight": 0.1, "baseline_us": 50, "best_us": 52, "speedup": 0.96, "baseline": "cuBLAS"},
    {"tag": "up_proj", "type": "matmul", "shape": "4096x6144x2048x0", "dtype": "fp16", "weight": 0.1, "baseline_us": 900, "best_us": 100, "speedup": 9, "baseline": "the starter"},
    {"tag": "mlp", "type": "fused_mlp", "shape": "4096x2048x6144", "dtype": "fp16", "weight": 0.2, "baseline_us": 300, "best_us": 290, "speedup": 1.03, "baseline": "baseline_us in the config"}]})");
  std::vector<std::string> left_out;
  auto kept = kept_kernels(run.path.string(), false, left_out);
  REQUIRE(kept.ok());
  REQUIRE(kept->size() == 2);
  CHECK((*kept)[0].tag == "mlp");
  CHECK((*kept)[1].tag == "q_proj");
  CHECK((*kept)[1].baseline == "cuBLAS");
  REQUIRE(left_out.size() == 2);
  CHECK_THAT(left_out[0], Catch::StartsWith("o_proj: 0.960x its baseline (cuBLAS), not faster at 4096x2048x2048x0"));
  CHECK_THAT(left_out[1], Catch::StartsWith("up_proj: its speedup is against the starter"));
  left_out.clear();
  auto all = kept_kernels(run.path.string(), true, left_out);
  REQUIRE(all.ok());
  CHECK(all->size() == 4);
}

TEST_CASE("a type's kept files share one launcher that carries each file's module and the shape it was tuned at", "[export]") {
  ExportedKernel rows = variant("rmsnorm", "row_in_registers"), heads = starter("rmsnorm");
  rows.tag = "norm", rows.shape = "4096x2048", rows.dtype = "fp16", rows.speedup = 2;
  heads.tag = "qk_norm", heads.shape = "65536x128", heads.dtype = "bf16", heads.speedup = 1.5;
  std::vector<std::string> left_out;
  auto files = package_files({rows, heads}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  CHECK(left_out.empty());
  const std::string& module = files->at("autokernel_ops/csrc/rmsnorm_module.h");
  CHECK_THAT(module, Catch::Contains("{\"sm_90a\", krmsnorm_sm_90a, sizeof krmsnorm_sm_90a}"));
  CHECK_THAT(module, Catch::Contains("{\"sm_90a\", krmsnorm_f1_sm_90a, sizeof krmsnorm_f1_sm_90a}"));
  CHECK_THAT(module, Catch::Contains("const char* const krmsnorm_f1_entries[] = {"));
  const std::string& launcher = files->at("autokernel_ops/csrc/rmsnorm_launch.cpp");
  CHECK_THAT(launcher, Catch::Contains("autokernel_launch::Module* const krmsnorm_files[] = {&krmsnorm_module, &krmsnorm_f1_module};"));
  CHECK_THAT(launcher, Catch::Contains("    {4096, 2048},  // 4096x2048 fp16\n    {65536, 128},  // 65536x128 bf16\n"));
  CHECK_THAT(launcher, Catch::Contains("const int krmsnorm_tuned_dtype[] = {0, 1};"));
  CHECK_THAT(launcher, Catch::Contains("const int file = pick_rmsnorm(s, dtype);"));
  CHECK_THAT(files->at("autokernel_ops/csrc/launch.h"), Catch::Contains("int pick_rmsnorm(const long long* shape, int dtype);"));
  CHECK(files->count("autokernel_ops/csrc/file_pick.h") == 1);
  CHECK(files->count("autokernel_ops/_served.py") == 1);
  CHECK(files->count("autokernel_ops/_graphs.py") == 1);
  // The manifest: one entry per type, its first file's fields where a one-file export had them, and every file.
  const auto manifest = nlohmann::json::parse(files->at("autokernel_ops/manifest.json"));
  REQUIRE(manifest["ops"].size() == 1);
  const auto& op = manifest["ops"][0];
  CHECK(op["type"] == "rmsnorm");
  CHECK(op["tag"] == "norm");
  CHECK(op["structure"] == "row_in_registers");
  CHECK(op["modules"].size() == 1);
  REQUIRE(op["files"].size() == 2);
  CHECK(op["files"][1]["tag"] == "qk_norm");
  CHECK(op["files"][1]["tuned_shapes"] == nlohmann::json::parse("[[65536, 128]]"));
  CHECK(op["files"][1]["speedup"] == 1.5);
  // A file of unknown shape (one file exported alone) has none.
  auto single = package_files({starter("softmax")}, PackageFormat::Torch, left_out);
  REQUIRE(single.ok());
  CHECK(nlohmann::json::parse(single->at("autokernel_ops/manifest.json"))["ops"][0]["files"][0]["tuned_shapes"].empty());
  CHECK_THAT(single->at("autokernel_ops/csrc/softmax_launch.cpp"), Catch::Contains("    {-1, -1},  // not known"));
}

TEST_CASE("a file of another contract version than its type's first is left out, saying why", "[export]") {
  auto v1 = read_file_text(AK_SOURCE_DIR "/tests/data/rotary_embedding_v1.cu");
  REQUIRE(v1);
  ExportedKernel old_file{"rotary_embedding", "old_rope", "kept.cu", *v1, "2x16x2048x128", "fp16", 0, 0, 0};
  std::vector<std::string> left_out;
  auto files = package_files({starter("rotary_embedding"), old_file}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  REQUIRE(left_out.size() == 1);
  CHECK_THAT(left_out[0], Catch::StartsWith("old_rope: follows version 1 of the rotary_embedding contract, the type's first file version 2"));
  CHECK(nlohmann::json::parse(files->at("autokernel_ops/manifest.json"))["ops"][0]["files"].size() == 1);
}

TEST_CASE("the hf-kernels layout has a build.toml naming every source it holds", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({starter("rmsnorm"), starter("rotary_embedding")}, PackageFormat::HfKernels, left_out);
  REQUIRE(files.ok());
  for (const char* f : {"build.toml", "flake.nix", "README.md", "torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h",
                        "torch-ext/autokernel_ops/__init__.py", "torch-ext/autokernel_ops/_patch.py",
                        "torch-ext/autokernel_ops/manifest.json", "torch-ext/ops/ops_namespace.h",
                        "autokernel_ops_cuda/loaded_module.h", "autokernel_ops_cuda/rmsnorm_module.h",
                        "autokernel_ops_cuda/rmsnorm_launch.cpp", "torch-ext/ops/rotary_tables.h"})
    CHECK(files->count(f) == 1);
  for (auto& [path, text] : *files) CHECK_THAT(text, !Catch::Contains("__global__"));
  auto toml = toml::parse(files->at("build.toml"));
  CHECK(toml["general"]["name"].value_or(std::string()) == "autokernel_ops");
  CHECK(toml["kernel"]["autokernel_ops"]["backend"].value_or(std::string()) == "cuda");
  CHECK(toml["kernel"]["autokernel_ops"]["depends"][0].value_or(std::string()) == "torch");
  CHECK(toml["kernel"]["autokernel_ops"]["cuda-capabilities"][0].value_or(std::string()) == "9.0");
  std::vector<std::string> listed;
  for (auto* table : {toml["torch"]["src"].as_array(), toml["kernel"]["autokernel_ops"]["src"].as_array()}) {
    REQUIRE(table);
    for (auto& e : *table) listed.push_back(e.value_or(std::string()));
  }
  for (auto& f : listed) CHECK(files->count(f) == 1);  // every listed source is in the package
  for (const char* f : {"torch-ext/ops/rmsnorm.cpp", "torch-ext/ops/rotary_embedding.cpp", "autokernel_ops_cuda/rotary_embedding_launch.cpp",
                        "autokernel_ops_cuda/rotary_embedding_module.h", "autokernel_ops_cuda/loaded_module.h"})
    CHECK(std::find(listed.begin(), listed.end(), f) != listed.end());
  CHECK_THAT(files->at("torch-ext/autokernel_ops/__init__.py"), Catch::Contains("from ._ops import add_op_namespace_prefix, ops"));
}

TEST_CASE("the hf-kernels layout holds the layers kernelize swaps in, verify's runner and the variant's build", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({starter("rmsnorm"), starter("swiglu")}, PackageFormat::HfKernels, left_out);
  REQUIRE(files.ok());
  for (const char* f : {"torch-ext/autokernel_ops/layers.py", "torch-ext/autokernel_ops/verify.py", "build_variant.py"})
    CHECK(files->count(f) == 1);
  const std::string& layers = files->at("torch-ext/autokernel_ops/layers.py");
  for (const char* c : {"class RMSNorm(nn.Module):", "class GatedMLP(nn.Module):", "class GateUpMLP(nn.Module):",
                        "class RotaryPosEmb(nn.Module):", "LAYER_NAMES = "})
    CHECK_THAT(layers, Catch::Contains(c));
  CHECK_THAT(files->at("torch-ext/autokernel_ops/__init__.py"), Catch::Contains("from . import layers"));
  // The built variant and its script are the package's own entries: --force replaces them too.
  for (const char* e : {"build", "build_variant.py"}) CHECK(std::count(package_entries().begin(), package_entries().end(), e) == 1);
  CHECK_THAT(files->at("README.md"), Catch::Contains("get_local_kernel") && Catch::Contains("build/<variant>/"));
}

TEST_CASE("each hf-kernels build registers its ops under a namespace of its own, even for the same files", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({starter("rmsnorm")}, PackageFormat::HfKernels, left_out);
  REQUIRE(files.ok());
  const std::string first = build_op_namespace(*files), second = build_op_namespace(*files);
  CHECK(first != second);
  CHECK(std::regex_match(first, std::regex("_autokernel_[0-9a-f]{16}")));
  CHECK(is_op_namespace(first));
  for (const char* not_one : {"autokernel", "_autokernel_0123456789ABCDEF", "_autokernel_0123456789abcde", "_autokernel_0123456789abcdefa",
                              "_autokernel_0123456789abcdeg"})
    CHECK_FALSE(is_op_namespace(not_one));
}

TEST_CASE("export --format hf-kernels says what the build of its variant lacks, exit 2, and leaves the source layout", "[export][cli]") {
  namespace fs = std::filesystem;
  test::TempDir dir;
  const std::string pkg = (dir.path / "pkg").string();
  auto no_python = test::run_autokernel("export starter --kernel rmsnorm --format hf-kernels --python /nonexistent/python3 --out " + pkg);
  CHECK(no_python.exit_code == 2);
  CHECK_THAT(no_python.out, Catch::Contains("cannot run /nonexistent/python3") && Catch::Contains("--source-only"));
  CHECK(fs::exists(fs::path(pkg) / "build.toml"));
  CHECK_FALSE(fs::exists(fs::path(pkg) / "build"));
  // A Python without site-packages stands for one without PyTorch.
  const std::string python = dir.write("python-without-torch", "#!/bin/sh\nexec python3 -S \"$@\"\n");
  fs::permissions(python, fs::perms::owner_all);
  auto no_torch = test::run_autokernel("export starter --kernel rmsnorm --format hf-kernels --force --python " + python + " --out " + pkg);
  CHECK(no_torch.exit_code == 2);
  CHECK_THAT(no_torch.out, Catch::Contains("cannot import PyTorch") && Catch::Contains("pip install torch") &&
                               Catch::Contains("build_variant.py"));
  auto torch_only = test::run_autokernel("export starter --kernel rmsnorm --source-only --out " + (dir.path / "t").string());
  CHECK(torch_only.exit_code == 2);
  CHECK_THAT(torch_only.out, Catch::Contains("--source-only is for --format hf-kernels"));
}

TEST_CASE("verify on an hf-kernels export without a built variant says how to build one", "[export][cli]") {
  test::TempDir dir;
  const std::string pkg = (dir.path / "pkg").string();
  REQUIRE(test::run_autokernel("export starter --kernel rmsnorm --format hf-kernels --source-only --out " + pkg).exit_code == 0);
  const std::string model = dir.write("m.py", "def build(dtype):\n    raise SystemExit('not run')\n");
  auto r = test::run_autokernel("verify --model " + model + " --ops " + pkg);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.out, Catch::Contains("without a built variant") && Catch::Contains("build_variant.py"));
  std::filesystem::create_directories(dir.path / "pkg/build/torch211-cxx11-cu130-x86_64-linux/autokernel_ops");
  std::filesystem::create_directories(dir.path / "pkg/build/torch210-cxx11-cu128-x86_64-linux/autokernel_ops");
  dir.write("pkg/build/torch211-cxx11-cu130-x86_64-linux/autokernel_ops/manifest.json", "{}");
  dir.write("pkg/build/torch210-cxx11-cu128-x86_64-linux/autokernel_ops/manifest.json", "{}");
  auto several = test::run_autokernel("verify --model " + model + " --ops " + pkg);
  CHECK(several.exit_code == 2);
  CHECK_THAT(several.out, Catch::Contains("several built variants") && Catch::Contains("torch211-cxx11-cu130-x86_64-linux"));
}

namespace {

const std::string kCudaInclude = "/usr/local/cuda/include";

bool host_compiler_or_skip() {
  if (test::run_shell("command -v g++ && test -f " + kCudaInclude + "/cuda.h").exit_code == 0) return true;
  std::printf("SKIPPED: no g++ or no %s/cuda.h on this machine\n", kCudaInclude.c_str());
  return false;
}

/// Builds `type`'s launcher from a written package into a shared library, and a program that loads
/// it and calls the launcher once (fp16, a 4 x 8 shape): what `import autokernel_ops` does on a
/// user's machine, less PyTorch. Returns the program's path.
std::string build_launcher_program(const std::filesystem::path& pkg, const std::string& type, const test::TempDir& dir) {
  const std::string csrc = (pkg / "autokernel_ops/csrc").string(), lib = (dir.path / (type + ".so")).string();
  auto built = test::run_shell("g++ -shared -fPIC -std=c++17 -O1 -I" + csrc + " -I" + kCudaInclude + " " + csrc + "/" + type +
                               "_launch.cpp -o " + lib + " -ldl");
  INFO(built.out);
  REQUIRE(built.exit_code == 0);
  const std::string main = dir.write(type + "_main.cpp",
      "#include <cstdio>\n#include \"launch.h\"\nint main() {\n  void* b[8] = {};\n  const long long s[24] = {4, 8, 1, 1};\n"
      "  const float c[4] = {1e-6f, 0, 0, 0};\n  const char* e = launch_" + type + "(b, s, c, 0, nullptr);\n"
      "  std::printf(\"launch: %s\\n\", e ? e : \"ok\");\n  const char* l = load_" + type + "();\n"
      "  std::printf(\"load: %s\\n\", l ? l : \"ok\");\n  return 0;\n}\n");
  const std::string program = (dir.path / (type + "_main")).string();
  auto linked = test::run_shell("g++ -std=c++17 -I" + csrc + " -I" + kCudaInclude + " " + main + " " + lib + " -Wl,-rpath," +
                                dir.path.string() + " -o " + program);
  INFO(linked.out);
  REQUIRE(linked.exit_code == 0);
  return program;
}

/// The bytes of the first module array in a <type>_module.h.
std::vector<char> embedded_module(const std::string& header) {
  std::vector<char> out;
  const size_t open = header.find("[] = {"), close = header.find("};", open);
  static const std::regex byte("0x([0-9a-f]{2}),");
  const std::string body = header.substr(open, close - open);
  for (auto it = std::sregex_iterator(body.begin(), body.end(), byte); it != std::sregex_iterator(); ++it)
    out.push_back(char(std::stoi((*it)[1].str(), nullptr, 16)));
  return out;
}

}  // namespace

TEST_CASE("the launchers build and link with the host compiler alone, and open the driver at run time", "[export][nvcc]") {
  if (!host_compiler_or_skip()) return;
  test::TempDir dir;
  std::vector<std::string> left_out;
  auto files = package_files({variant("rmsnorm", "row_in_registers"), starter("cross_entropy"), starter("rotary_embedding"),
                              variant("matmul", "tma_warp_specialized"), variant("fused_mlp", "tma_swiglu"),
                              variant("flash_attention", "tma_pingpong")},
                             PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  REQUIRE(write_package(*files, (dir.path / "pkg").string()).ok());
  for (const char* t : {"rmsnorm", "cross_entropy", "rotary_embedding", "matmul", "fused_mlp", "flash_attention"}) {
    INFO(t);
    const std::string program = build_launcher_program(dir.path / "pkg", t, dir);
    // libcuda is opened, never linked: the library builds and loads where there is no driver.
    auto undefined = test::run_shell("nm -D --undefined-only " + (dir.path / (std::string(t) + ".so")).string());
    CHECK_THAT(undefined.out, !Catch::Contains("cuModule") && !Catch::Contains("cuLaunchKernel"));
    // Without a GPU the launcher says the driver is missing; with one, that no context is current
    // (this program never made one): an answer either way, never a crash.
    auto run = test::run_shell(program);
    CHECK(run.exit_code == 0);
    CHECK_THAT(run.out, Catch::Contains("launch: cannot open the CUDA driver") || Catch::Contains("launch: no current CUDA context"));
    // The load the op makes at import answers the same way, outside any launch.
    CHECK_THAT(run.out, Catch::Contains("load: cannot open the CUDA driver") || Catch::Contains("load: no current CUDA context"));
  }
}

TEST_CASE("a launcher of two files, built with the host compiler, picks each call's file by its shape and counts no launch before one", "[export][nvcc]") {
  if (!host_compiler_or_skip()) return;
  test::TempDir dir;
  ExportedKernel rows = variant("rmsnorm", "row_in_registers"), heads = starter("rmsnorm");
  rows.shape = "4096x2048", rows.dtype = "fp16";
  heads.shape = "65536x128", heads.dtype = "fp16";
  std::vector<std::string> left_out;
  auto files = package_files({rows, heads}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  const std::filesystem::path pkg = dir.path / "pkg";
  REQUIRE(write_package(*files, pkg.string()).ok());
  const std::string csrc = (pkg / "autokernel_ops/csrc").string();
  const std::string main = dir.write("pick_main.cpp",
      "#include <cstdio>\n#include \"launch.h\"\nint main() {\n"
      "  const long long a[] = {4096, 2048}, b[] = {65536, 128}, c[] = {8192, 128}, d[] = {8, 2048};\n"
      "  std::printf(\"files %d picks %d %d %d %d launches %lld %lld %lld\\n\", files_rmsnorm(), pick_rmsnorm(a, 0),\n"
      "              pick_rmsnorm(b, 0), pick_rmsnorm(c, 1), pick_rmsnorm(d, 0), launches_rmsnorm(0), launches_rmsnorm(1),\n"
      "              launches_rmsnorm(2));\n  return 0;\n}\n");
  const std::string program = (dir.path / "pick").string();
  auto built = test::run_shell("g++ -std=c++17 -O1 -I" + csrc + " -I" + kCudaInclude + " " + main + " " + csrc +
                               "/rmsnorm_launch.cpp -ldl -o " + program + " && " + program);
  INFO(built.out);
  REQUIRE(built.exit_code == 0);
  CHECK_THAT(built.out, Catch::Contains("files 2 picks 0 1 1 0 launches 0 0 -1"));
}

TEST_CASE("host code hidden from NVRTC in a kernel file never reaches the package, and the module is NVRTC's own", "[export][nvcc]") {
  if (!host_compiler_or_skip()) return;
  test::TempDir dir;
  const std::string marker = (dir.path / "planted-ran").string();
  // Two ways to hide host code from NVRTC that a host compiler sees: a block NVRTC skips, and
  // text after a NUL byte, which NVRTC never reads (a compiler that reads the file by size does).
  ExportedKernel k = starter("rmsnorm");
  k.origin = "planted.cu";
  k.source = "// rmsnorm variant made_up_by_the_kernel: made up by the kernel\n" + k.source;
  k.source += "\n#if !defined(__CUDACC_RTC__)\nextern \"C\" int system(const char*);\n"
              "static int ak_planted_initialiser = system(\"touch " + marker + "\");\n#endif\n";
  k.source += std::string(1, '\0') + "\nstatic int ak_after_nul = system(\"touch " + marker + "-nul\");\n";
  std::vector<std::string> left_out;
  auto files = package_files({k}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  // (a) Nothing of the file's text is in the package: neither hidden part, nor the kernel itself.
  auto manifest = nlohmann::json::parse(files->at("autokernel_ops/manifest.json"));
  CHECK(manifest["ops"][0]["structure"] == "other");  // its first line is its own text: not taken
  for (auto& [path, text] : *files) {
    INFO(path);
    CHECK_THAT(text, !Catch::Contains("made_up_by_the_kernel") && !Catch::Contains("ak_planted_initialiser") && !Catch::Contains("ak_after_nul") &&
                         !Catch::Contains("system(") && !Catch::Contains("__global__"));
  }
  const std::filesystem::path pkg = dir.path / "pkg";
  REQUIRE(write_package(*files, pkg.string()).ok());
  // (b) The launcher, built, linked and run as a user's machine would, runs nothing of the file.
  auto run = test::run_shell(build_launcher_program(pkg, "rmsnorm", dir));
  CHECK(run.exit_code == 0);
  CHECK_FALSE(std::filesystem::exists(marker));
  CHECK_FALSE(std::filesystem::exists(marker + "-nul"));
  // (c) The module the package embeds is, byte for byte, what the harness's compile made of the file.
  auto compiled = compile_candidate(*find_spec("rmsnorm"), k.source, k.origin, "sm_90a");
  REQUIRE(compiled.ok());
  REQUIRE(compiled->ok);
  const std::vector<char> embedded = embedded_module(files->at("autokernel_ops/csrc/rmsnorm_module.h"));
  CHECK(embedded.size() == compiled->output.cubin.size());
  CHECK(embedded == compiled->output.cubin);
  // The control: the planted block is live host code. Built by nvcc as packages used to build the
  // kernel file (with the host side of its __constant__ values beside it), it runs when the
  // library loads.
  if (test::run_shell("test -x /usr/local/cuda/bin/nvcc").exit_code != 0) return;
  std::string host_side = "extern \"C\" {\n";
  for (auto& c : exported_constants(k.source)) host_side += "int " + c + ";\n";
  const std::string file = dir.write("planted.cu", k.source), symbols = dir.write("planted_symbols.cpp", host_side + "}\n");
  const std::string lib = (dir.path / "planted.so").string();
  auto built = test::run_shell("/usr/local/cuda/bin/nvcc -shared -Xcompiler -fPIC -std=c++17 -gencode arch=compute_90a,code=sm_90a " +
                               file + " " + symbols + " -o " + lib + " && python3 -c 'import ctypes; ctypes.CDLL(\"" + lib + "\")'");
  INFO(built.out);
  CHECK(built.exit_code == 0);
  CHECK(std::filesystem::exists(marker));
}

TEST_CASE("autokernel export writes a package from a starter and refuses what it cannot export, saying why", "[export][cli]") {
  test::TempDir dir;
  auto r = test::run_autokernel("export starter --kernel rmsnorm --out " + (dir.path / "pkg").string());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("rmsnorm            from starter"));
  CHECK(std::filesystem::exists(dir.path / "pkg/autokernel_ops/csrc/rmsnorm_module.h"));
  CHECK_FALSE(std::filesystem::exists(dir.path / "pkg/autokernel_ops/kernels"));
  auto tiled = test::run_autokernel("export " + std::string(AK_SOURCE_DIR) + "/tests/data/matmul_v1.cu --kernel matmul --out " +
                                    (dir.path / "mm").string());
  CHECK(tiled.exit_code == 1);
  CHECK_THAT(tiled.out, Catch::Contains("left out matmul: matmul version 1 is not exported") && Catch::Contains("nothing to export"));
  auto no_run = test::run_autokernel("export --run " + dir.path.string() + " --out " + (dir.path / "x").string());
  CHECK(no_run.exit_code == 2);
  CHECK_THAT(no_run.out, Catch::Contains("is not a run folder"));
  auto both = test::run_autokernel("export starter --kernel rmsnorm --run " + dir.path.string() + " --out x");
  CHECK(both.exit_code == 2);
}

TEST_CASE("every file of either layout lies under one of the package's own entries", "[export]") {
  for (PackageFormat format : {PackageFormat::Torch, PackageFormat::HfKernels}) {
    std::vector<std::string> left_out;
    auto files = package_files({starter("rmsnorm")}, format, left_out);
    REQUIRE(files.ok());
    for (auto& [path, text] : *files) {
      INFO(path);
      const std::string top = path.substr(0, path.find('/'));
      CHECK(std::count(package_entries().begin(), package_entries().end(), top) == 1);
    }
  }
}

TEST_CASE("export --out refuses a folder with an earlier export unless --force, which leaves none of its modules behind", "[export][cli]") {
  namespace fs = std::filesystem;
  test::TempDir dir;
  const fs::path pkg = dir.path / "pkg";
  REQUIRE(test::run_autokernel("export starter --kernel softmax --out " + pkg.string()).exit_code == 0);
  REQUIRE(fs::exists(pkg / "autokernel_ops/csrc/softmax_module.h"));
  dir.write("pkg/notes.txt", "the user's own file\n");
  const std::string readme = test::read_file((pkg / "README.md").string());
  for (const char* format : {"torch", "hf-kernels"}) {
    INFO(format);
    auto again = test::run_autokernel("export starter --kernel rmsnorm --format " + std::string(format) + " --out " + pkg.string());
    CHECK(again.exit_code == 2);
    CHECK_THAT(again.out, Catch::Contains("holds an earlier export (autokernel_ops, pyproject.toml, README.md)") &&
                              Catch::Contains("--force"));
    CHECK(test::read_file((pkg / "README.md").string()) == readme);
  }
  auto forced = test::run_autokernel("export starter --kernel rmsnorm --out " + pkg.string() + " --force");
  CHECK(forced.exit_code == 0);
  CHECK(fs::exists(pkg / "autokernel_ops/csrc/rmsnorm_module.h"));
  CHECK_FALSE(fs::exists(pkg / "autokernel_ops/csrc/softmax_module.h"));   // the earlier module is gone
  CHECK_THAT(test::read_file((pkg / "autokernel_ops/manifest.json").string()), !Catch::Contains("\"type\": \"softmax\""));
  CHECK(test::read_file((pkg / "notes.txt").string()) == "the user's own file\n");
  // Another layout replaces the first one whole.
  auto hf = test::run_autokernel("export starter --kernel rmsnorm --format hf-kernels --source-only --out " + pkg.string() + " --force");
  CHECK(hf.exit_code == 0);
  CHECK(fs::exists(pkg / "build.toml"));
  CHECK_FALSE(fs::exists(pkg / "autokernel_ops"));
  CHECK_FALSE(fs::exists(pkg / "pyproject.toml"));
  const std::string file = dir.write("a-file", "x");
  auto onto_file = test::run_autokernel("export starter --kernel rmsnorm --out " + file);
  CHECK(onto_file.exit_code == 2);
  CHECK_THAT(onto_file.out, Catch::Contains("is a file"));
}

TEST_CASE("the seven row-wise starters, exported, build and match PyTorch on the five stages' shapes", "[gpu][export][torch]") {
  if (!gpu_torch_or_skip()) return;
  test::TempDir dir;
  std::vector<ExportedKernel> kernels;
  for (const char* t : {"rmsnorm", "layernorm", "softmax", "rotary_embedding", "cross_entropy", "reduce", "swiglu"}) kernels.push_back(starter(t));
  std::vector<std::string> left_out;
  auto files = package_files(kernels, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  REQUIRE(write_package(*files, (dir.path / "pkg").string()).ok());
  // tests/gpu/check-exported-ops.py: every stage shape and dtype against PyTorch, calls outside the
  // contract, torch.compile, an unseen norm class; exit 0 only when all hold.
  auto r = test::run_shell("cd " + std::string(AK_SOURCE_DIR) + " && TORCH_EXTENSIONS_DIR=" + (dir.path / "ext").string() +
                           " PYTHONPATH=" + (dir.path / "pkg").string() + " python3 tests/gpu/check-exported-ops.py --autokernel " +
                           test::autokernel_binary() + " --repetitions 20 --json " + (dir.path / "ops.json").string());
  INFO(r.out);
  CHECK(r.exit_code == 0);
  auto report = nlohmann::json::parse(test::read_file((dir.path / "ops.json").string()));
  CHECK(report["ops"].size() == kernels.size());
  CHECK(report["failed"].empty());
}

TEST_CASE("on the GPU each call launches the file its shape picks, fp32 rotary tables run the kernel, swiglu serves a fused projection's halves, and capture() replays the patched step", "[gpu][export][export-ops-gpu]") {
  if (!gpu_torch_or_skip()) return;
  test::TempDir dir;
  ExportedKernel rows = variant("rmsnorm", "row_in_registers"), heads = starter("rmsnorm");
  rows.tag = "norm", rows.shape = "4096x2048", rows.dtype = "fp16";
  heads.tag = "qk_norm", heads.shape = "65536x128", heads.dtype = "fp16";
  ExportedKernel rope = starter("rotary_embedding");
  rope.shape = "2x16x4x256x128x1", rope.dtype = "fp16";
  // swiglu tuned at Phi-3 mini's MLP (the halves of its fused projection, rows 2 I apart) and at a LLaMA's.
  ExportedKernel phi3 = starter("swiglu"), llama = starter("swiglu");
  phi3.tag = "phi3_mlp", phi3.shape = "4096x8192x16384", phi3.dtype = "fp16";
  llama.tag = "llama_mlp", llama.shape = "4096x5632x5632", llama.dtype = "fp16";
  std::vector<std::string> left_out;
  auto files = package_files({rows, heads, rope, phi3, llama}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  REQUIRE(write_package(*files, (dir.path / "pkg").string()).ok());
  // The repository this binary runs in (a bundle on the GPU machine runs from its copy's root), else the one it was built from.
  const std::string script = "tests/daemon/export/gpu_step_check.py";
  const std::string root = std::filesystem::exists(script) ? std::filesystem::current_path().string() : std::string(AK_SOURCE_DIR);
  auto r = test::run_shell("cd " + root + " && TORCH_EXTENSIONS_DIR=" + (dir.path / "ext").string() +
                           " PYTHONPATH=" + (dir.path / "pkg").string() + " python3 " + script + " 2>&1");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("0 failures"));
}

TEST_CASE("on the GPU a run's kept matmul, fused_mlp and flash_attention serve a decoder's projections, MLP and GQA attention at their tuned shapes only", "[gpu][export][export-ops-gpu][tensor-core-export]") {
  if (!gpu_torch_or_skip()) return;
  test::TempDir run, dir;
  write_run(run, {{"tma_warp_specialized", R"({"tag": "qo_proj", "type": "matmul", "shape": "4096x2048x2048x0", "dtype": "fp16", "weight": 0.2, "baseline_us": 100, "best_us": 90, "speedup": 1.11, "baseline": "cuBLAS"})"},
                  {"tma_swiglu", R"({"tag": "mlp", "type": "fused_mlp", "shape": "4096x2048x6144", "dtype": "fp16", "weight": 0.4, "baseline_us": 600, "best_us": 500, "speedup": 1.2, "baseline": "baseline_us in the config"})"},
                  {"tma_pingpong", R"({"tag": "attention", "type": "flash_attention", "shape": "2x16x4x2048x128x1x2", "dtype": "fp16", "weight": 0.1, "baseline_us": 300, "best_us": 280, "speedup": 1.07, "baseline": "baseline_us in the config"})"}});
  package_run(run.path, 3, dir.path / "pkg");
  auto r = test::run_shell(with_package(dir) + " python3 tests/daemon/export/gpu_tensor_core_check.py 2>&1");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("0 failures"));
  // The same decoder through autokernel verify: outputs agree (exit 0), eagerly and as CUDA graphs,
  // and its served counts say which calls each op took.
  auto report = verify_with_package(dir, "tests/daemon/export/tiny_decoder.py");
  auto served = served_by_function(report);
  REQUIRE(served.count("torch.nn.functional.linear") == 1);
  const auto& linear = served["torch.nn.functional.linear"];
  INFO(linear.dump());
  // q and o a layer, 2 layers served; k and v (4 kv heads: [4096, 512, 2048]) and the LM head (and
  // the MLP's projections, where the MLP runs whole in fused_mlp) are not: PyTorch's F.linear runs
  // there, counted as op_fell_back.
  CHECK(linear["served"] == 4);
  CHECK(linear["files"]["qo_proj"] == 4);
  CHECK(linear["op_fell_back"].get<int>() >= 5);
  // Each layer's SDPA call, 16 query heads over 4 kv heads on the projections' views, by the kept file.
  REQUIRE(served.count("torch.nn.functional.scaled_dot_product_attention") == 1);
  const auto& attention = served["torch.nn.functional.scaled_dot_product_attention"];
  INFO(attention.dump());
  CHECK(attention["type"] == "flash_attention");
  CHECK(attention["served"] == 2);
  CHECK(attention["share"] == 1.0);
  CHECK(attention["files"]["attention"] == 2);
  // verify timed a call of the op beside SDPA's, on the GPU.
  bool timed = false;
  for (auto& row : report["cpu_cost"]["calls"])
    if (row["name"] == "torch.nn.functional.scaled_dot_product_attention")
      timed = row["gpu_us_per_call"].get<double>() > 0 && row["original_gpu_us_per_call"].get<double>() > 0;
  CHECK(timed);
  // verify loads the model file under a module name of its own.
  auto mlp_row = std::find_if(served.begin(), served.end(), [](auto& kv) { return kv.first.ends_with(".DecoderMLP.forward"); });
  REQUIRE(mlp_row != served.end());
  const auto& mlp = mlp_row->second;
  INFO(mlp.dump());
  CHECK(mlp["type"] == "fused_mlp");
  CHECK(mlp["served"] == 2);
  CHECK(mlp["share"] == 1.0);
  CHECK(report["autokernel_graph"].contains("median_ms"));
  CHECK(report["autokernel_capture"].contains("median_ms"));
}

TEST_CASE("on the GPU a run's kept matmul and fused_mlp serve a transformers Qwen3's q and o projections and every MLP call but never its k and v projections or LM head", "[gpu][export][tensor-core-export]") {
  if (!gpu_torch_or_skip()) return;
  // examples/models/hf_qwen3.py builds transformers' Qwen3ForCausalLM (transformers 4.51 and later).
  if (test::run_shell("python3 -c 'from transformers import Qwen3Config, Qwen3ForCausalLM' 2>&1").exit_code != 0) {
    std::printf("SKIPPED: no GPU with transformers here (python3 cannot import transformers' Qwen3: pip install transformers)\n");
    return;
  }
  // Qwen3's q and o projections are [4096, 2048, 2048] without bias, its k and v [4096, 512, 2048]
  // (4 kv heads of 128), its LM head [4096, 32000, 2048], its MLP (Qwen3MLP, act_fn transformers'
  // ACT2FN["silu"]) [4096, 2048, 6144]. Only the first shape and the MLP's have a kept file.
  test::TempDir run, dir;
  write_run(run, {{"tma_warp_specialized", R"({"tag": "qo_proj", "type": "matmul", "shape": "4096x2048x2048x0", "dtype": "fp16", "weight": 0.2, "baseline_us": 100, "best_us": 90, "speedup": 1.11, "baseline": "cuBLAS"})"},
                  {"tma_swiglu", R"({"tag": "mlp", "type": "fused_mlp", "shape": "4096x2048x6144", "dtype": "fp16", "weight": 0.4, "baseline_us": 600, "best_us": 500, "speedup": 1.2, "baseline": "baseline_us in the config"})"}});
  package_run(run.path, 2, dir.path / "pkg");
  auto report = verify_with_package(dir, "examples/models/hf_qwen3.py");
  auto served = served_by_function(report);
  constexpr int kLayers = 8;
  // The MLP runs whole in fused_mlp, so F.linear is called for q, k, v and o a layer and the LM head:
  // the kept file serves q and o; PyTorch's F.linear runs for k, v and the head (op_fell_back), none
  // declined in Python.
  REQUIRE(served.count("torch.nn.functional.linear") == 1);
  const auto& linear = served["torch.nn.functional.linear"];
  INFO(linear.dump());
  CHECK(linear["type"] == "matmul");
  CHECK(linear["calls"] == 4 * kLayers + 1);
  CHECK(linear["served"] == 2 * kLayers);
  CHECK(linear["files"].value("qo_proj", 0) == 2 * kLayers);
  CHECK(linear["op_fell_back"] == 2 * kLayers + 1);
  CHECK(linear["declined"] == 0);
  // transformers' own MLP class, found in its model module (not the model file's), every call served.
  const std::string mlp_class = "transformers.models.qwen3.modeling_qwen3.Qwen3MLP.forward";
  REQUIRE(served.count(mlp_class) == 1);
  const auto& mlp = served[mlp_class];
  INFO(mlp.dump());
  CHECK(mlp["type"] == "fused_mlp");
  CHECK(mlp["calls"] == kLayers);
  CHECK(mlp["served"] == kLayers);
  CHECK(mlp["share"] == 1.0);
  CHECK(mlp["files"].value("mlp", 0) == kLayers);
  CHECK(mlp["not_its_form"] == 0);
}
