// The compile sandbox on the CPU, with real NVRTC compiles: a suite of ways to make the compiler
// read a file, each of which must be refused with the include named and must not print a byte of
// a marker file or of a marker variable of the daemon's environment.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "harness/compile/compile_log_filter.hpp"
#include "harness/compile/compile_sandbox.hpp"
#include "harness/compile/file_guard.hpp"
#include "kernels_cuda/registry.hpp"
#include "tests/support.hpp"

using namespace ak;
namespace fs = std::filesystem;

namespace {

const std::string kFileMarker = "AKMARKERFILE4711";
const std::string kEnvMarker = "AKMARKERENV0815";

/// A marker file, and the daemon's environment holding a marker variable.
struct Markers {
  test::TempDir dir;
  std::string file;
  Markers() {
    file = dir.write("marker.txt", kFileMarker + " secret line one\n" + kFileMarker + "\n");
    setenv("AK_TEST_MARKER_SECRET", kEnvMarker.c_str(), 1);
  }
};

/// The rmsnorm starter with `lines` put after its includes.
std::string starter_plus(const std::string& lines) {
  std::string s = rmsnorm_spec().starter_source();
  const std::string anchor = "#include <cuda_fp16.h>\n";
  return s.insert(s.find(anchor) + anchor.size(), lines + "\n");
}

test::RunOutput compile(const Markers& m, const std::string& name, const std::string& source, const std::string& env = "",
                        const std::string& cwd = "") {
  auto file = m.dir.write(name, source);
  return test::run_autokernel("compile " + file + " --kernel rmsnorm", (cwd.empty() ? "" : "cd " + cwd + " &&") + env);
}

void refused_without_leaking(const test::RunOutput& r, const std::string& named) {
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find(kFileMarker) == std::string::npos);
  CHECK(r.out.find(kEnvMarker) == std::string::npos);
  CHECK_THAT(r.out, Catch::Contains(named));
}

std::string climb() {
  std::string up;
  for (int i = 0; i < 16; ++i) up += "../";
  return up;
}

}  // namespace

TEST_CASE("include spellings that slip past a text check are refused where the file is opened", "[sandbox]") {
  Markers m;
  const std::string f = m.file;
  const std::vector<std::pair<std::string, std::string>> spellings = {
      {"#define AK_PATH \"" + f + "\"\n#include AK_PATH", f},
      {"%:include \"" + f + "\"", f},
      {"#include_next \"" + f + "\"", f},
      {"/* note */ #include \"" + f + "\"", f},
      {"#include <cooperative_groups/" + climb() + f.substr(1) + ">", f.substr(1)},
      {"#inc\\\nlude \"" + f + "\"", f},
      {"#if __has_include(\"" + f + "\")\n#error the marker exists\n#endif", f},
      {"#line 1 \"" + f + "\"\n#include \"marker.txt\"", "marker.txt"},
      {"#include \"" + climb() + f.substr(1) + "\"", f.substr(1)},
      {"#include \"/proc/self/environ\"", "/proc/self/environ"},
      {"%:include \"/proc/self/maps\"", "/proc/self/maps"},
      {"%:include \"/dev/stdin\"", "/dev/stdin"},
      {"%:include \"/dev/urandom\"", "/dev/urandom"},
  };
  for (auto& [lines, named] : spellings) {
    INFO(lines);
    refused_without_leaking(compile(m, "spelling.cu", starter_plus(lines)), named);
  }
}

TEST_CASE("a relative include from the working directory finds nothing there", "[sandbox]") {
  Markers m;
  // The daemon runs in the marker's folder; the compiler does not.
  refused_without_leaking(compile(m, "relative.cu", starter_plus("%:include \"marker.txt\""), "", m.dir.path.string()),
                          "marker.txt");
}

TEST_CASE("a symbolic link inside the CUDA headers' folder that points out of it is refused", "[sandbox]") {
  Markers m;
  // A CUDA folder of the test's own (CUDA_HOME), with a link among its headers.
  const fs::path include = m.dir.path / "cuda" / "include";
  fs::create_directories(include);
  std::ofstream(include / "cuda_fp16.h") << "// stand-in\n";
  std::ofstream(include / "cuda_bf16.h") << "// stand-in\n";
  fs::create_symlink(m.file, include / "evil.h");
  auto r = compile(m, "link.cu", starter_plus("%:include <evil.h>"), "CUDA_HOME=" + (m.dir.path / "cuda").string());
  refused_without_leaking(r, "evil.h");
  CHECK_THAT(r.out, Catch::Contains("which it may not read"));
}

TEST_CASE("the starters compile in the sandbox with nothing refused", "[sandbox]") {
  for (const KernelSpec* spec : all_specs()) {
    auto r = test::run_autokernel("compile starter --kernel " + spec->type);
    INFO(r.out);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, !Catch::Contains("may not read"));
  }
}

TEST_CASE("the guard's rule: real paths under the root pass, links and .. out of it do not", "[sandbox]") {
  test::TempDir d;
  const fs::path root = d.path / "root", outside = d.path / "outside.txt";
  fs::create_directories(root / "sub");
  std::ofstream(root / "sub" / "ok.h") << "x";
  std::ofstream(outside) << "x";
  fs::create_symlink(outside, root / "link.h");
  const std::string r = root.string();
  CHECK(path_allowed(r + "/sub/ok.h", r));
  CHECK(path_allowed(r + "/sub/missing.h", r));        // a probe for a header that is not there
  CHECK(path_allowed(r + "/nodir/deeper/missing.h", r));   // ... nor its folders (CUDA 13's cuda/std under include/)
  CHECK_FALSE(path_allowed(r + "/nodir/../../outside.txt", r));   // no climbing past what does not exist
  CHECK_FALSE(path_allowed(r + "/nodir/./x.h", r));
  CHECK(path_allowed(r + "/sub/../sub/ok.h", r));
  CHECK_FALSE(path_allowed(r + "/link.h", r));          // resolved first
  CHECK_FALSE(path_allowed(r + "/sub/../../outside.txt", r));
  CHECK_FALSE(path_allowed(outside.string(), r));
  CHECK_FALSE(path_allowed(r + "x/file", r));           // a sibling whose name starts like the root
  CHECK_FALSE(path_allowed("/proc/self/environ", r));
}

TEST_CASE("a compile log keeps the candidate's and CUDA's diagnostics and drops those quoting other files", "[sandbox]") {
  const std::string log =
      "rmsnorm.cu(3): error: identifier \"flaot\" is undefined\n"
      "  const flaot x = 1;\n"
      "        ^\n"
      "\n"
      "/etc/secret(1): error: this declaration has no storage class or type specifier\n"
      "  SECRET-VALUE\n"
      "  ^\n"
      "\n"
      "/usr/local/cuda/include/cuda_fp16.hpp(10): warning: something in a header\n"
      "  __half x;\n"
      "/usr/local/cuda/include/../../../etc/other(2): error: climbing out\n"
      "  OTHER-VALUE\n"
      "3 errors detected in the compilation of \"rmsnorm.cu\".";
  std::string kept = keep_candidate_text(log, "rmsnorm.cu", "/usr/local/cuda/include");
  CHECK_THAT(kept, Catch::Contains("flaot") && Catch::Contains("cuda_fp16.hpp(10)") && Catch::Contains("3 errors detected"));
  CHECK_THAT(kept, !Catch::Contains("SECRET-VALUE") && !Catch::Contains("OTHER-VALUE") && !Catch::Contains("/etc/secret"));
  CHECK_THAT(kept, Catch::EndsWith("(6 lines quoting other files removed)"));
  CHECK(keep_candidate_text("rmsnorm.cu(3): error: x\n  y", "rmsnorm.cu", "/usr/local/cuda/include") == "rmsnorm.cu(3): error: x\n  y");
}

TEST_CASE("ptxas's errors stay in the log even after a diagnostic quoting another file was removed", "[sandbox]") {
  const std::string log =
      "/etc/secret(1): warning: SECRET-VALUE\n"
      "ptxas application ptx input, line 28; error   : Unknown modifier '.u33'\n"
      "    at rmsnorm.cu line 4, PTX line 28: add.u33 %r2, %r2, 1;\n"
      "ptxas fatal   : Ptx assembly aborted due to errors";
  const std::string kept = keep_candidate_text(log, "rmsnorm.cu", "/usr/local/cuda/include");
  CHECK_THAT(kept, !Catch::Contains("SECRET-VALUE"));
  CHECK_THAT(kept, Catch::StartsWith("ptxas application ptx input, line 28; error   : Unknown modifier '.u33'\n"
                                     "    at rmsnorm.cu line 4, PTX line 28: add.u33 %r2, %r2, 1;\n"
                                     "ptxas fatal   : Ptx assembly aborted due to errors"));
}

TEST_CASE("CUDA's libcu++ headers (<cuda/std/...>) can be included, wherever the toolkit keeps them", "[sandbox]") {
  Markers m;
  auto r = compile(m, "libcu.cu",
                   starter_plus("#include <cuda/std/cstdint>\nstatic_assert(sizeof(cuda::std::int32_t) == 4, \"\");"));
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, !Catch::Contains("may not read"));
}

TEST_CASE("a compile log cut inside a UTF-8 character is cut before it, and the file still compiles", "[sandbox]") {
  Markers m;
  // A warning of 6000 two-byte characters: past the log's 8000-byte cut, which falls inside a
  // character for one of the two offsets.
  std::string accents;
  for (int i = 0; i < 6000; ++i) accents += "\xC3\xA9";
  for (const std::string pad : {"", "x"}) {
    auto r = compile(m, "accents.cu", starter_plus("#warning " + pad + accents));
    INFO(r.out.substr(0, 400));
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, !Catch::Contains("signal") && Catch::Contains("more characters of compiler output cut"));
  }
  // Bytes that are no UTF-8 at all reach the log replaced, never as a reason to die.
  auto r = compile(m, "invalid.cu", starter_plus("#warning \xFF\xFE invalid \xC3"));
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, !Catch::Contains("signal"));
}

TEST_CASE("the compile server's protocol line never throws on the bytes of a compile log", "[sandbox]") {
  CompileOutput o;
  o.log = "cut inside \xC3";
  o.log += "\xFF";
  std::string line;
  REQUIRE_NOTHROW(line = protocol_line(reply_json(o, {})));
  auto j = nlohmann::json::parse(line);
  CHECK(j["log"].get<std::string>() == "cut inside \xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(truncate_log(std::string(7999, 'x') + "\xC3\xA9" + std::string(100, 'y'), 8000) ==
        std::string(7999, 'x') + "\n... (102 more characters of compiler output cut)");
}
