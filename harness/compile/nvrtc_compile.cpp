#include "harness/compile/nvrtc_compile.hpp"

#include <nvrtc.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "harness/compile/ptxas_log.hpp"

namespace ak {
namespace {

struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) nvrtcDestroyProgram(&p);
  }
};

std::string program_log(nvrtcProgram p) {
  size_t n = 0;
  nvrtcGetProgramLogSize(p, &n);
  std::string log(n, '\0');
  if (n) nvrtcGetProgramLog(p, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

/// The PTX NVRTC made, which it keeps when ptxas fails on it; empty when there is none.
std::string program_ptx(nvrtcProgram p) {
  size_t n = 0;
  if (nvrtcGetPTXSize(p, &n) != NVRTC_SUCCESS || n == 0) return "";
  std::string ptx(n, '\0');
  if (nvrtcGetPTX(p, ptx.data()) != NVRTC_SUCCESS) return "";
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string truncate_log(const std::string& log, size_t max_chars) {
  if (log.size() <= max_chars) return log;
  // Never inside a UTF-8 character: step back over continuation bytes to the one that starts it.
  size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(log[cut]) & 0xC0) == 0x80) --cut;
  return log.substr(0, cut) + "\n... (" + std::to_string(log.size() - cut) + " more characters of compiler output cut)";
}

std::string cuda_include_dir() {
  namespace fs = std::filesystem;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* home = std::getenv(var))
      if (fs::exists(fs::path(home) / "include" / "cuda_fp16.h")) return (fs::path(home) / "include").string();
#ifdef AK_CUDA_INCLUDE_DIR
  if (fs::exists(fs::path(AK_CUDA_INCLUDE_DIR) / "cuda_fp16.h")) return AK_CUDA_INCLUDE_DIR;
#endif
  return "/usr/local/cuda/include";
}

std::vector<std::string> cuda_include_dirs() {
  const std::string root = cuda_include_dir();
  std::vector<std::string> dirs{root};
  // CUDA 13 moved libcu++, CUB and Thrust (<cuda/std/...>, <cub/...>) under include/cccl, which
  // nvcc searches by itself and NVRTC only when told.
  if (std::filesystem::is_directory(root + "/cccl")) dirs.push_back(root + "/cccl");
  return dirs;
}

std::string arch_for(int major, int minor) {
  std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
  return major == 9 ? arch + "a" : arch;
}

Result<CompileOutput> nvrtc_compile(const CompileRequest& req) {
  auto t0 = std::chrono::steady_clock::now();
  Program prog;
  nvrtcResult r = nvrtcCreateProgram(&prog.p, req.source.c_str(), req.filename.c_str(), 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS)
    return error("NVRTC could not create a program for " + req.filename + ": " + nvrtcGetErrorString(r));
  for (auto& expr : req.name_expressions) nvrtcAddNameExpression(prog.p, expr.c_str());

  const std::string arch = "--gpu-architecture=" + req.arch;
  std::vector<std::string> includes;
  for (auto& dir : cuda_include_dirs()) includes.push_back("-I" + dir);
  // ptxas optimises each instantiation on its own thread: a tensor-core file's two dtypes (and its
  // head-dimension or edge paths) compile in about two thirds of the time, part of every experiment.
  std::vector<const char*> opts{arch.c_str(), "-std=c++17", "-lineinfo", "-Xptxas", "-v", "--split-compile=4"};
  for (auto& i : includes) opts.push_back(i.c_str());
  r = nvrtcCompileProgram(prog.p, int(opts.size()), opts.data());

  CompileOutput out;
  for (auto& expr : req.name_expressions) {
    FunctionInfo f;
    f.name_expression = expr;
    const char* lowered = nullptr;
    if (r == NVRTC_SUCCESS && nvrtcGetLoweredName(prog.p, expr.c_str(), &lowered) == NVRTC_SUCCESS)
      f.lowered_name = lowered;
    out.functions.push_back(f);
  }
  std::string diagnostics = split_ptxas_log(program_log(prog.p), out.functions);
  if (diagnostics.find("ptxas") != std::string::npos)
    diagnostics = annotate_ptxas_lines(diagnostics, program_ptx(prog.p), req.filename);
  out.log = truncate_log(diagnostics);
  if (r == NVRTC_ERROR_INVALID_OPTION)
    return error("NVRTC rejected the options for " + req.filename + " (arch '" + req.arch +
                 "'; expected sm_NN such as sm_80 or sm_90a): " + out.log);
  out.ok = r == NVRTC_SUCCESS;
  out.out_of_memory = r == NVRTC_ERROR_OUT_OF_MEMORY;
  if (out.ok) {
    size_t n = 0;
    nvrtcGetCUBINSize(prog.p, &n);
    out.cubin.resize(n);
    nvrtcGetCUBIN(prog.p, out.cubin.data());
    for (auto& f : out.functions)
      if (f.lowered_name.empty()) {
        out.ok = false;
        out.log += "\nthe file does not define " + f.name_expression;
      }
  } else if (out.log.empty()) {
    out.log = nvrtcGetErrorString(r);
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace ak
