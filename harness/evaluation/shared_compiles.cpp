#include "harness/evaluation/shared_compiles.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/atomic_write.hpp"

namespace ak {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kSuffix = ".compiled";

/// The running binary, by its size and time: a best compiled under an older autokernel's rules
/// (its contract, its refusal of modules that keep state) is compiled again under the new ones,
/// as it was before any compile was shared, not loaded past them after a restart.
const std::string& build_identity() {
  static const std::string id = [] {
    struct stat st {};
    if (::stat("/proc/self/exe", &st) != 0) return std::string("unknown");
    return std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  }();
  return id;
}

/// Everything the output depends on, as the entry stores it and compares it on reading.
json request_json(const CompileRequest& req) {
  return {{"autokernel", build_identity()}, {"nvrtc", nvrtc_version()}, {"arch", req.arch},
          {"filename", req.filename}, {"names", req.name_expressions}, {"source", req.source}};
}

json functions_json(const std::vector<FunctionInfo>& fs) {
  json out = json::array();
  for (const FunctionInfo& f : fs)
    out.push_back({{"name_expression", f.name_expression}, {"lowered_name", f.lowered_name},
                   {"registers", f.registers}, {"spill_stores", f.spill_stores}, {"spill_loads", f.spill_loads},
                   {"stack_bytes", f.stack_bytes}, {"static_smem_bytes", f.static_smem_bytes}});
  return out;
}

std::vector<FunctionInfo> functions_from(const json& j) {
  std::vector<FunctionInfo> out;
  for (const json& f : j) {
    FunctionInfo i;
    i.name_expression = f.at("name_expression").get<std::string>();
    i.lowered_name = f.at("lowered_name").get<std::string>();
    i.registers = f.at("registers").get<int>();
    i.spill_stores = f.at("spill_stores").get<int>();
    i.spill_loads = f.at("spill_loads").get<int>();
    i.stack_bytes = f.at("stack_bytes").get<int>();
    i.static_smem_bytes = f.at("static_smem_bytes").get<int>();
    out.push_back(std::move(i));
  }
  return out;
}

/// Where the entry of `request` (request_json) lies: a hash of it, FNV-1a; the request inside the
/// entry is what is compared.
std::string entry_name_of(const json& request) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : request.dump()) h = (h ^ c) * 1099511628211ull;
  char name[32];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(h));
  return name + std::string(kSuffix);
}

std::optional<std::vector<uint8_t>> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::string SharedCompiles::entry_name(const CompileRequest& req) { return entry_name_of(request_json(req)); }

std::optional<CompileOutput> SharedCompiles::load(const CompileRequest& req) const {
  if (folder_.empty()) return std::nullopt;
  const json request = request_json(req);
  const std::string path = folder_ + "/" + entry_name_of(request);
  auto bytes = read_bytes(path);
  if (!bytes || bytes->empty()) return std::nullopt;
  const json j = json::from_cbor(*bytes, true, false);
  if (j.is_discarded() || !j.is_object() || j.value("request", json()) != request) return std::nullopt;
  try {
    CompileOutput out;
    out.ok = true;
    out.log = j.at("log").get<std::string>();
    const auto& cubin = j.at("cubin").get_binary();
    out.cubin.assign(cubin.begin(), cubin.end());
    out.functions = functions_from(j.at("functions"));
    if (out.cubin.empty()) return std::nullopt;
    std::error_code ec;
    fs::last_write_time(path, fs::file_time_type::clock::now(), ec);   // found: the last to be removed
    return out;
  } catch (const json::exception&) {
    return std::nullopt;   // an entry of another build's shape: compiled again
  }
}

Status SharedCompiles::save(const CompileRequest& req, const CompileOutput& out) const {
  if (folder_.empty() || !out.ok || out.cubin.empty()) return ok();
  const json request = request_json(req);
  const json j = {{"request", request},
                  {"log", out.log},
                  {"cubin", json::binary_t(std::vector<uint8_t>(out.cubin.begin(), out.cubin.end()))},
                  {"functions", functions_json(out.functions)}};
  const std::vector<uint8_t> bytes = json::to_cbor(j);
  if (auto s = write_file_atomic(folder_ + "/" + entry_name_of(request), std::string(bytes.begin(), bytes.end())); !s)
    return error("cannot keep a compiled best: " + s.error().message);
  remove_oldest();
  return ok();
}

void SharedCompiles::remove_oldest() const {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> entries;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::minutes(10);
  for (const auto& e : fs::directory_iterator(folder_, ec)) {
    const auto written = e.last_write_time(ec);
    if (e.path().extension() == kSuffix) entries.emplace_back(written, e.path());
    // What a worker killed mid-write left (NAME.compiled.tmp.PID): no one renames it any more.
    else if (e.path().filename().string().find(std::string(kSuffix) + ".tmp.") != std::string::npos && written < stale)
      fs::remove(e.path(), ec);
  }
  if (entries.size() <= kMaxEntries) return;
  // Down to three quarters: one removal for many saves, not one for each save past the bound.
  std::sort(entries.begin(), entries.end());
  for (size_t i = 0; i + kMaxEntries * 3 / 4 < entries.size(); ++i) fs::remove(entries[i].second, ec);
}

}  // namespace ak
