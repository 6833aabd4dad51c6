// The package `autokernel export` writes: its files, its manifest and build metadata, and launchers
// that follow each type's spec (and compile, where nvcc is installed).
#include <catch2/catch.hpp>

#include <regex>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "daemon/export/export_package.hpp"
#include "daemon/export/kernel_launcher.hpp"
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

}  // namespace

TEST_CASE("an exported kernel file is copied unchanged beside a launcher in its spec's argument order", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({variant("rmsnorm", "row_in_registers"), starter("cross_entropy")}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  CHECK(left_out.empty());
  for (const char* f : {"pyproject.toml", "README.md", "autokernel_ops/__init__.py", "autokernel_ops/_load.py",
                        "autokernel_ops/_patch.py", "autokernel_ops/_replacements.py", "autokernel_ops/_fakes.py",
                        "autokernel_ops/verify.py", "autokernel_ops/manifest.json", "autokernel_ops/csrc/common.h",
                        "autokernel_ops/csrc/launch.h", "autokernel_ops/csrc/grid_rules.h", "autokernel_ops/csrc/rmsnorm.cpp",
                        "autokernel_ops/csrc/rmsnorm_launch.cu", "autokernel_ops/csrc/rmsnorm_symbols.cpp",
                        "autokernel_ops/csrc/cross_entropy.cpp"})
    CHECK(files->count(f) == 1);
  CHECK(files->at("autokernel_ops/kernels/rmsnorm.cu") == variant("rmsnorm", "row_in_registers").source);
  const std::string& launcher = files->at("autokernel_ops/csrc/rmsnorm_launch.cu");
  CHECK_THAT(launcher, Catch::Contains("#include \"../kernels/rmsnorm.cu\""));
  CHECK_THAT(launcher, Catch::Contains("#define ak_block_threads ak_export_rmsnorm_block_threads"));
  CHECK_THAT(launcher, Catch::Contains("ak_rowwise_blocks(s, 2, g.rows_per_block)"));
  // x, weight, y, rows, cols, eps: the order of kernels_cuda/rmsnorm/rmsnorm_spec.cpp.
  CHECK_THAT(launcher, Catch::Contains("auto* kernel = &rmsnorm_kernel<__half>;\n"
                                       "      const __half* a0 = (const __half*)b[0];\n"
                                       "      const __half* a1 = (const __half*)b[1];\n"
                                       "      __half* a2 = (__half*)b[2];\n"
                                       "      int a3 = (int)s[0];\n      int a4 = (int)s[1];\n      float a5 = c[0];"));
  // cross_entropy's int64 targets and uint32 counters keep their own types whatever the dtype.
  const std::string& ce = files->at("autokernel_ops/csrc/cross_entropy_launch.cu");
  CHECK_THAT(ce, Catch::Contains("const long long* a1 = (const long long*)b[1];"));
  CHECK_THAT(ce, Catch::Contains("unsigned int* a4 = (unsigned int*)b[4];"));
  CHECK_THAT(files->at("autokernel_ops/csrc/launch.h"), Catch::Contains("const char* launch_cross_entropy("));
  auto manifest = nlohmann::json::parse(files->at("autokernel_ops/manifest.json"));
  CHECK(manifest["schema"] == "autokernel-export-1");
  REQUIRE(manifest["ops"].size() == 2);
  CHECK(manifest["ops"][0]["type"] == "rmsnorm");
  CHECK(manifest["ops"][0]["structure"] == "row_in_registers");
  CHECK(manifest["ops"][0]["file"] == "kernels/rmsnorm.cu");
}

TEST_CASE("the grid rule a package carries is the harness's own", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({starter("softmax")}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  CHECK(files->at("autokernel_ops/csrc/grid_rules.h") == test::read_file(AK_SOURCE_DIR "/kernels_cuda/grid_rules.h"));
}

TEST_CASE("types with a tiled grid are left out with the reason, and nothing left to export is an error", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({starter("matmul"), starter("softmax")}, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  REQUIRE(left_out.size() == 1);
  CHECK_THAT(left_out[0], Catch::Contains("matmul is not exported yet"));
  CHECK(files->count("autokernel_ops/kernels/matmul.cu") == 0);
  left_out.clear();
  auto none = package_files({starter("flash_attention")}, PackageFormat::Torch, left_out);
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.error().message, Catch::Contains("nothing to export"));
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

TEST_CASE("a run's kept kernels are read from its state, one per type (the heaviest), a slower one only when asked", "[export]") {
  test::TempDir run;
  std::filesystem::create_directories(run.path / "kernels");
  run.write("kernels/norm_a.cu", "// a\n");
  run.write("kernels/norm_b.cu", "// b\n");
  run.write("kernels/rope.cu", "// rope\n");
  run.write("kernels/soft.cu", "// softmax\n");
  run.write("state.json", R"({"kernels": [
    {"tag": "norm_a", "type": "rmsnorm", "shape": "4096x2048", "dtype": "fp16", "weight": 0.05, "baseline_us": 40, "best_us": 10, "speedup": 4},
    {"tag": "norm_b", "type": "rmsnorm", "shape": "8x2048", "dtype": "fp16", "weight": 0.01, "baseline_us": 5, "best_us": 4, "speedup": 1.25},
    {"tag": "rope", "type": "rotary_embedding", "shape": "2x16x2048x128", "dtype": "fp16", "weight": 0.1, "baseline_us": 60, "best_us": 20, "speedup": 3},
    {"tag": "soft", "type": "softmax", "shape": "98304x512", "dtype": "fp16", "weight": 0.13, "baseline_us": 85.6, "best_us": 88.0, "speedup": 0.973}]})");
  std::vector<std::string> left_out;
  auto kept = kept_kernels(run.path.string(), false, left_out);
  REQUIRE(kept.ok());
  REQUIRE(kept->size() == 2);
  CHECK((*kept)[0].tag == "norm_a");
  CHECK((*kept)[0].source == "// a\n");
  CHECK((*kept)[0].speedup == 4);
  CHECK((*kept)[1].type == "rotary_embedding");
  REQUIRE(left_out.size() == 2);
  CHECK_THAT(left_out[0], Catch::StartsWith("norm_b:"));
  CHECK_THAT(left_out[1], Catch::StartsWith("soft: 0.973x its baseline, slower"));
  left_out.clear();
  auto all = kept_kernels(run.path.string(), true, left_out);
  REQUIRE(all.ok());
  CHECK(all->size() == 3);
  auto missing = kept_kernels((run.path / "nope").string(), false, left_out);
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message, Catch::Contains("not a run folder"));
}

TEST_CASE("the hf-kernels layout has a build.toml naming every source it holds", "[export]") {
  std::vector<std::string> left_out;
  auto files = package_files({starter("rmsnorm"), starter("rotary_embedding")}, PackageFormat::HfKernels, left_out);
  REQUIRE(files.ok());
  for (const char* f : {"build.toml", "flake.nix", "README.md", "torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h",
                        "torch-ext/autokernel_ops/__init__.py", "torch-ext/autokernel_ops/_patch.py",
                        "torch-ext/autokernel_ops/manifest.json", "torch-ext/ops/ops_namespace.h",
                        "autokernel_ops_cuda/kernels/rmsnorm.cuh", "autokernel_ops_cuda/rmsnorm_launch.cu"})
    CHECK(files->count(f) == 1);
  CHECK_THAT(files->at("autokernel_ops_cuda/rmsnorm_launch.cu"), Catch::Contains("#include \"kernels/rmsnorm.cuh\""));
  auto toml = toml::parse(files->at("build.toml"));
  CHECK(toml["general"]["name"].value_or(std::string()) == "autokernel_ops");
  CHECK(toml["kernel"]["autokernel_ops"]["backend"].value_or(std::string()) == "cuda");
  CHECK(toml["kernel"]["autokernel_ops"]["depends"][0].value_or(std::string()) == "torch");
  std::vector<std::string> listed;
  for (auto* table : {toml["torch"]["src"].as_array(), toml["kernel"]["autokernel_ops"]["src"].as_array()}) {
    REQUIRE(table);
    for (auto& e : *table) listed.push_back(e.value_or(std::string()));
  }
  for (auto& f : listed) CHECK(files->count(f) == 1);  // every listed source is in the package
  for (const char* f : {"torch-ext/ops/rmsnorm.cpp", "torch-ext/ops/rotary_embedding.cpp", "autokernel_ops_cuda/rotary_embedding_launch.cu",
                        "autokernel_ops_cuda/kernels/rotary_embedding.cuh"})
    CHECK(std::find(listed.begin(), listed.end(), f) != listed.end());
  CHECK_THAT(files->at("torch-ext/autokernel_ops/__init__.py"), Catch::Contains("from ._ops import add_op_namespace_prefix, ops"));
}

TEST_CASE("the launchers compile with nvcc against the real kernel files", "[export][nvcc]") {
  if (test::run_shell("command -v nvcc || test -x /usr/local/cuda/bin/nvcc").exit_code != 0) {
    std::printf("SKIPPED: no nvcc on this machine\n");
    return;
  }
  test::TempDir dir;
  std::vector<std::string> left_out;
  auto files = package_files({variant("rmsnorm", "row_in_registers"), starter("cross_entropy"), starter("rotary_embedding")},
                             PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  REQUIRE(write_package(*files, dir.path.string()).ok());
  const std::string csrc = (dir.path / "autokernel_ops/csrc").string();
  for (const char* t : {"rmsnorm", "cross_entropy", "rotary_embedding"}) {
    INFO(t);
    const std::string o = (dir.path / t).string();
    auto r = test::run_shell("PATH=$PATH:/usr/local/cuda/bin; nvcc -c -std=c++17 -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a -I" +
                             csrc + " " + csrc + "/" + t + "_launch.cu -o " + o + ".o && g++ -c -fPIC " + csrc + "/" + t +
                             "_symbols.cpp -o " + o + "_symbols.o && nvcc -shared " + o + ".o " + o + "_symbols.o -o " + o + ".so");
    INFO(r.out);
    CHECK(r.exit_code == 0);
    // The library loads: nothing of the kernel file's is left undefined (its __constant__ values'
    // host side), and the launcher is there to call.
    auto undefined = test::run_shell("nm -D --undefined-only " + o + ".so");
    CHECK_THAT(undefined.out, !Catch::Contains("ak_export_"));
    CHECK_THAT(test::run_shell("nm -D --defined-only " + o + ".so").out, Catch::Contains("launch_"));
  }
}

TEST_CASE("autokernel export writes a package from a starter and refuses what it cannot export, saying why", "[export][cli]") {
  test::TempDir dir;
  auto r = test::run_autokernel("export starter --kernel rmsnorm --out " + (dir.path / "pkg").string());
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("rmsnorm            from starter"));
  CHECK(std::filesystem::exists(dir.path / "pkg/autokernel_ops/kernels/rmsnorm.cu"));
  auto tiled = test::run_autokernel("export starter --kernel matmul --out " + (dir.path / "mm").string());
  CHECK(tiled.exit_code == 1);
  CHECK_THAT(tiled.out, Catch::Contains("left out matmul: matmul is not exported yet") && Catch::Contains("nothing to export"));
  auto no_run = test::run_autokernel("export --run " + dir.path.string() + " --out " + (dir.path / "x").string());
  CHECK(no_run.exit_code == 2);
  CHECK_THAT(no_run.out, Catch::Contains("is not a run folder"));
  auto both = test::run_autokernel("export starter --kernel rmsnorm --run " + dir.path.string() + " --out x");
  CHECK(both.exit_code == 2);
}

TEST_CASE("the six row-wise starters, exported, build and match PyTorch on the five stages' shapes", "[gpu][export][torch]") {
  if (!test::gpu_or_skip()) return;
  if (test::run_shell("python3 -c 'import torch, torch.utils.cpp_extension'").exit_code != 0) {
    std::printf("SKIPPED: no GPU with PyTorch here (python3 cannot import torch)\n");
    return;
  }
  test::TempDir dir;
  std::vector<ExportedKernel> kernels;
  for (const char* t : {"rmsnorm", "layernorm", "softmax", "rotary_embedding", "cross_entropy", "reduce"}) kernels.push_back(starter(t));
  std::vector<std::string> left_out;
  auto files = package_files(kernels, PackageFormat::Torch, left_out);
  REQUIRE(files.ok());
  REQUIRE(write_package(*files, (dir.path / "pkg").string()).ok());
  // scripts/check-exported-ops.py: every stage shape and dtype against PyTorch, calls outside the
  // contract, torch.compile, an unseen norm class; exit 0 only when all hold.
  auto r = test::run_shell("cd " + std::string(AK_SOURCE_DIR) + " && TORCH_EXTENSIONS_DIR=" + (dir.path / "ext").string() +
                           " PYTHONPATH=" + (dir.path / "pkg").string() + " python3 scripts/check-exported-ops.py --autokernel " +
                           test::autokernel_binary() + " --repetitions 20 --json " + (dir.path / "ops.json").string());
  INFO(r.out);
  CHECK(r.exit_code == 0);
  auto report = nlohmann::json::parse(test::read_file((dir.path / "ops.json").string()));
  CHECK(report["ops"].size() == 6);
  CHECK(report["failed"].empty());
}
