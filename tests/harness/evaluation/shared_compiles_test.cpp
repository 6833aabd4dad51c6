// The compiles a run's workers share: found again only for exactly the request that made them,
// a damaged or misplaced entry is a miss, no folder shares nothing, and the folder stays bounded.
#include "harness/evaluation/shared_compiles.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "tests/support.hpp"

namespace ak {
namespace {

namespace fs = std::filesystem;

CompileRequest request_of(const std::string& source) {
  CompileRequest r;
  r.source = source;
  r.filename = "rmsnorm.cu";
  r.name_expressions = {"rmsnorm_kernel<float>", "rmsnorm_kernel<__half>"};
  r.arch = "sm_90a";
  return r;
}

CompileOutput output_of(const std::string& cubin) {
  CompileOutput out;
  out.ok = true;
  out.log = "rmsnorm.cu: a warning";
  out.cubin.assign(cubin.begin(), cubin.end());
  FunctionInfo f;
  f.name_expression = "rmsnorm_kernel<float>";
  f.lowered_name = "_Z14rmsnorm_kernelIfEvv";
  f.registers = 40, f.spill_stores = 8, f.spill_loads = 4, f.stack_bytes = 16, f.static_smem_bytes = 1024;
  out.functions = {f};
  return out;
}

/// A run's compiled/ folder in a temp dir.
struct Folder {
  test::TempDir tmp;
  std::string path = tmp.path.string();
  SharedCompiles shared{path};
};

size_t entries_in(const std::string& folder) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(folder)) n += e.path().extension() == ".compiled";
  return n;
}

}  // namespace

TEST_CASE("a compile one worker shared is found by another with its cubin, log and statistics", "[harness][shared-compiles]") {
  Folder f;
  const CompileRequest req = request_of("// the best\n");
  const std::string cubin("CUBIN-BYTES\0\x01\xff", 14);   // bytes, a NUL among them
  REQUIRE(SharedCompiles(f.path).save(req, output_of(cubin)).ok());
  auto found = SharedCompiles(f.path).load(req);   // another worker's view of the folder
  REQUIRE(found);
  CHECK(found->ok);
  CHECK(std::string(found->cubin.begin(), found->cubin.end()) == cubin);
  CHECK(found->log == "rmsnorm.cu: a warning");
  REQUIRE(found->functions.size() == 1);
  CHECK(found->functions[0].lowered_name == "_Z14rmsnorm_kernelIfEvv");
  CHECK(found->functions[0].registers == 40);
  CHECK(found->functions[0].spill_stores == 8);
  CHECK(found->functions[0].spill_loads == 4);
  CHECK(found->functions[0].stack_bytes == 16);
  CHECK(found->functions[0].static_smem_bytes == 1024);
}

TEST_CASE("a shared compile is not found for a request that differs in its source, arch, file name or instantiations",
          "[harness][shared-compiles]") {
  Folder f;
  const CompileRequest req = request_of("// the best\n");
  REQUIRE(f.shared.save(req, output_of("CUBIN")).ok());
  CompileRequest other = req;
  other.source = "// the best \n";
  CHECK_FALSE(f.shared.load(other));
  other = req, other.arch = "sm_100a";
  CHECK_FALSE(f.shared.load(other));
  other = req, other.filename = "softmax.cu";
  CHECK_FALSE(f.shared.load(other));
  other = req, other.name_expressions.pop_back();
  CHECK_FALSE(f.shared.load(other));
  CHECK(f.shared.load(req));
}

TEST_CASE("an entry under another request's name, as a hash collision would leave it, is a miss", "[harness][shared-compiles]") {
  Folder f;
  const CompileRequest slow = request_of("// a slow file\n"), best = request_of("// the best\n");
  REQUIRE(f.shared.save(slow, output_of("SLOW")).ok());
  fs::rename(f.path + "/" + SharedCompiles::entry_name(slow), f.path + "/" + SharedCompiles::entry_name(best));
  CHECK_FALSE(f.shared.load(best));
}

TEST_CASE("an entry left by another autokernel binary or another NVRTC is a miss, so the running one's rules apply",
          "[harness][shared-compiles]") {
  Folder f;
  const CompileRequest req = request_of("// the best\n");
  const std::string path = f.path + "/" + SharedCompiles::entry_name(req);
  for (const char* field : {"autokernel", "nvrtc"}) {
    INFO(field);
    REQUIRE(f.shared.save(req, output_of("CUBIN")).ok());
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    nlohmann::json entry = nlohmann::json::from_cbor(bytes);
    REQUIRE(entry["request"].contains(field));
    REQUIRE(f.shared.load(req));
    entry["request"][field] = "an older one";
    const std::vector<uint8_t> changed = nlohmann::json::to_cbor(entry);
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(changed.data()), std::streamsize(changed.size()));
    CHECK_FALSE(f.shared.load(req));
  }
}

TEST_CASE("a damaged shared compile is a miss, never an error or a crash", "[harness][shared-compiles]") {
  Folder f;
  const CompileRequest req = request_of("// the best\n");
  REQUIRE(f.shared.save(req, output_of(std::string(4096, 'c'))).ok());
  const std::string path = f.path + "/" + SharedCompiles::entry_name(req);
  const auto whole = fs::file_size(path);
  SECTION("cut short") { fs::resize_file(path, whole / 2); }
  SECTION("empty") { fs::resize_file(path, 0); }
  SECTION("not CBOR") { std::ofstream(path, std::ios::trunc) << "{\"request\": 1}"; }
  CHECK_FALSE(f.shared.load(req));
}

TEST_CASE("with no folder nothing is shared, and a failed compile is never shared", "[harness][shared-compiles]") {
  Folder f;
  const CompileRequest req = request_of("// the best\n");
  CHECK(SharedCompiles("").save(req, output_of("CUBIN")).ok());
  CHECK_FALSE(SharedCompiles("").load(req));
  CompileOutput failed = output_of("CUBIN");
  failed.ok = false;
  CHECK(SharedCompiles(f.path).save(req, failed).ok());
  CHECK(entries_in(f.path) == 0);
}

TEST_CASE("a folder that cannot be written is an error that names it", "[harness][shared-compiles]") {
  Folder f;
  auto kept = SharedCompiles(f.path + "/no-such-folder").save(request_of("// x\n"), output_of("CUBIN"));
  REQUIRE_FALSE(kept.ok());
  CHECK_THAT(kept.error().message, Catch::Contains(f.path + "/no-such-folder"));
}

TEST_CASE("a half-written entry a killed worker left is removed once it is old, never one being written", "[harness][shared-compiles]") {
  Folder f;
  const std::string old_tmp = f.path + "/" + SharedCompiles::entry_name(request_of("// a\n")) + ".tmp.4242";
  const std::string new_tmp = f.path + "/" + SharedCompiles::entry_name(request_of("// b\n")) + ".tmp.4343";
  std::ofstream(old_tmp) << "half";
  std::ofstream(new_tmp) << "half";
  fs::last_write_time(old_tmp, fs::file_time_type::clock::now() - std::chrono::hours(1));
  REQUIRE(f.shared.save(request_of("// c\n"), output_of("C")).ok());
  CHECK_FALSE(fs::exists(old_tmp));
  CHECK(fs::exists(new_tmp));   // another worker's, being written now
  CHECK(entries_in(f.path) == 1);
}

TEST_CASE("past its bound the folder loses its oldest entries, and keeps the newest", "[harness][shared-compiles]") {
  Folder f;
  const size_t n = SharedCompiles::kMaxEntries + 1;
  for (size_t i = 0; i < n; ++i) {
    REQUIRE(f.shared.save(request_of("// file " + std::to_string(i) + "\n"), output_of("C")).ok());
    // Distinct times, as saves seconds apart would have: the order the oldest go in.
    fs::last_write_time(f.path + "/" + SharedCompiles::entry_name(request_of("// file " + std::to_string(i) + "\n")),
                        fs::file_time_type::clock::now() - std::chrono::seconds(n - i));
  }
  CHECK(entries_in(f.path) <= SharedCompiles::kMaxEntries);
  CHECK(entries_in(f.path) >= SharedCompiles::kMaxEntries / 2);
  CHECK(f.shared.load(request_of("// file " + std::to_string(n - 1) + "\n")));
  CHECK_FALSE(f.shared.load(request_of("// file 0\n")));
}

}  // namespace ak
