#include "harness/nvrtc_compile.hpp"

#include <nvrtc.h>

#include <chrono>
#include <limits>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>

#include "common/parse_number.hpp"

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

/// One number of a ptxas statistics line; a line a candidate forged with a number past an int
/// (through a #pragma message) reads as the largest int rather than ending the worker.
int statistic(const std::string& digits) {
  auto v = parse_integer(digits);
  return v && *v <= std::numeric_limits<int>::max() ? int(*v) : std::numeric_limits<int>::max();
}

/// Splits NVRTC's log into diagnostics (returned) and ptxas statistics (parsed into functions).
std::string parse_ptxas(const std::string& log, std::vector<FunctionInfo>& functions) {
  static const std::regex entry(R"(Function properties for (\S+))");
  static const std::regex compiling(R"(Compiling entry function '([^']+)')");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::istringstream in(log);
  std::string line, diagnostics;
  FunctionInfo* current = nullptr;
  std::smatch m;
  auto find = [&](const std::string& lowered) -> FunctionInfo* {
    for (auto& f : functions)
      if (f.lowered_name == lowered) return &f;
    return nullptr;
  };
  while (std::getline(in, line)) {
    if (line.rfind("ptxas", 0) != 0) {
      diagnostics += line + "\n";
      continue;
    }
    if (std::regex_search(line, m, compiling) || std::regex_search(line, m, entry)) {
      current = find(m[1]);
    } else if (current && std::regex_search(line, m, frame)) {
      current->stack_bytes = statistic(m[1]);
      current->spill_stores = statistic(m[2]);
      current->spill_loads = statistic(m[3]);
    } else if (current && std::regex_search(line, m, regs)) {
      current->registers = statistic(m[1]);
      if (std::regex_search(line, m, smem)) current->static_smem_bytes = statistic(m[1]);
    }
  }
  while (!diagnostics.empty() && diagnostics.back() == '\n') diagnostics.pop_back();
  return diagnostics;
}

}  // namespace

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
  out.log = truncate_log(parse_ptxas(program_log(prog.p), out.functions));
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
