#pragma once
// Helpers the tests share: temp folders, running the real binary, and the GPU gate.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "harness/gpu/cuda_driver.hpp"

namespace ak::test {

/// A folder under /tmp, removed when the test ends.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("ak-test-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    auto p = path / name;
    std::ofstream(p) << text;
    return p.string();
  }
};

struct RunOutput {
  int exit_code = -1;
  std::string out;   ///< stdout and stderr together
};

/// The autokernel binary: $AK_BINARY, else beside this test binary (a GPU bundle), else the build's.
inline std::string autokernel_binary() {
  if (const char* b = std::getenv("AK_BINARY")) return b;
  auto sibling = std::filesystem::read_symlink("/proc/self/exe").parent_path() / "autokernel";
  if (std::filesystem::exists(sibling)) return sibling.string();
  return AK_BINARY;
}

/// Runs a shell command; captures its stdout and stderr.
inline RunOutput run_shell(const std::string& command) {
  std::string cmd = command + " 2>&1";
  RunOutput r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Runs the autokernel binary with a shell argument string; captures its output.
inline RunOutput run_autokernel(const std::string& args, const std::string& env = "") {
  return run_shell(env + " " + autokernel_binary() + " " + args);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// True when a GPU is usable; otherwise prints the line ctest reads as "skipped".
inline bool gpu_or_skip() {
  auto d = cuda_driver();
  if (d.ok()) {
    int n = 0;
    if ((*d)->cuDeviceGetCount(&n) == CUDA_SUCCESS && n > 0) return true;
  }
  std::printf("SKIPPED: no GPU on this machine (%s)\n", d.ok() ? "no device" : d.error().message.c_str());
  return false;
}

}  // namespace ak::test
