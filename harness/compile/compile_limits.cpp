#include "harness/compile/compile_limits.hpp"

#include <algorithm>
#include <cstdio>

namespace ak {
namespace {

std::string mib(uint64_t bytes) {
  if (bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % (1 << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

}  // namespace

CompileLimits compile_limits_within(double stage_timeout_s) {
  CompileLimits l = kDefaultCompileLimits;
  l.seconds = std::min(l.seconds, stage_timeout_s / 2);
  return l;
}

std::string describe_limit(CompileLimit limit, const CompileLimits& l) {
  switch (limit) {
    case CompileLimit::Time: return "the time limit (" + seconds(l.seconds) + ")";
    case CompileLimit::Memory: return "the memory limit (" + mib(l.memory_bytes) + ")";
    case CompileLimit::SourceSize: return "the source size limit (" + mib(l.source_bytes) + ")";
    case CompileLimit::InitialisedData: return "the initialised data limit (" + mib(l.initialised_data_bytes) + ")";
    case CompileLimit::ModuleSize: return "the module size limit (" + mib(l.module_bytes) + ")";
    case CompileLimit::None: break;
  }
  return "no limit";
}

std::string limit_name(CompileLimit limit) {
  switch (limit) {
    case CompileLimit::Time: return "time";
    case CompileLimit::Memory: return "memory";
    case CompileLimit::SourceSize: return "source size";
    case CompileLimit::InitialisedData: return "initialised data";
    case CompileLimit::ModuleSize: return "module size";
    case CompileLimit::None: break;
  }
  return "";
}

CompileLimit limit_from_name(const std::string& name) {
  for (auto l : {CompileLimit::Time, CompileLimit::Memory, CompileLimit::SourceSize, CompileLimit::InitialisedData,
                 CompileLimit::ModuleSize})
    if (limit_name(l) == name) return l;
  return CompileLimit::None;
}

}  // namespace ak
