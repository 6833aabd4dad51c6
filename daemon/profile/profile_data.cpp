#include "daemon/profile/profile_data.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <tuple>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/text_escape.hpp"
#include "common/file_text.hpp"
#include "common/parse_number.hpp"
#include "common/untrusted_text.hpp"
#include "daemon/profile/kernel_classifier.hpp"
#include "daemon/profile/module_attribution.hpp"
#include "kernels_cuda/registry.hpp"

namespace ak {
namespace {

/// Elements beyond which an NVTX range's tensor is not a tensor: the products of its sizes stay
/// inside a long long.
constexpr long long kMaxNvtxElements = 1LL << 62;

struct Range {
  long long tid;
  double start, end;
  std::string name;
};

/// What encloses one kernel's launch: the innermost range not of the module hook (PyTorch's own
/// operator range, when the program emits them), and the innermost module range that stands for
/// one of autokernel's types.
struct Enclosing {
  const Range* op = nullptr;
  const Range* module = nullptr;
  std::string module_type;
  ModuleRange parsed;
  /// The innermost hook range when it is a leaf module of none of autokernel's types (a GELU, a
  /// custom activation): its kernels may add up to an "other" candidate (a user type to offer).
  const Range* leaf = nullptr;
  ModuleRange leaf_parsed;
  /// The innermost hook range is an nn.Linear that gives its features: its GEMM's shape and dtype.
  std::vector<long long> linear_gemm;
  std::string linear_dtype;
};

bool unclassified_leaf(const ModuleRange& m) { return m.kind == "module" && m.leaf == 1 && classify_module(m).empty(); }

/// Finds what encloses each launch in one sweep per thread: ranges pushed and popped on a thread
/// nest, so a stack holds exactly the ranges open at a time. `launches` are (tid, time) pairs.
std::vector<Enclosing> enclosing_all(std::vector<Range>& ranges, const std::vector<std::pair<long long, double>>& launches) {
  std::sort(ranges.begin(), ranges.end(), [](auto& a, auto& b) { return std::tie(a.tid, a.start) < std::tie(b.tid, b.start); });
  std::vector<size_t> order(launches.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return launches[a] < launches[b]; });
  std::map<const Range*, std::optional<ModuleRange>> parsed;
  std::vector<Enclosing> out(launches.size());
  std::vector<const Range*> stack;
  size_t next = 0;
  long long tid = -1;
  for (size_t i : order) {
    const auto [t_tid, t] = launches[i];
    if (t_tid != tid) {
      stack.clear();
      tid = t_tid;
      while (next < ranges.size() && ranges[next].tid < tid) ++next;
    }
    for (; next < ranges.size() && ranges[next].tid == tid && ranges[next].start <= t; ++next) {
      while (!stack.empty() && stack.back()->end < ranges[next].start) stack.pop_back();
      stack.push_back(&ranges[next]);
    }
    while (!stack.empty() && stack.back()->end < t) stack.pop_back();
    Enclosing& e = out[i];
    bool innermost_hook_range = true;
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      if ((*it)->end < t) continue;  // a range that closed under a longer-lived one
      auto [p, fresh] = parsed.try_emplace(*it);
      if (fresh) p->second = parse_module_range((*it)->name);
      if (!p->second) {
        if (!e.op) e.op = *it;
        continue;
      }
      if (std::exchange(innermost_hook_range, false)) {
        if (unclassified_leaf(*p->second)) e.leaf = *it, e.leaf_parsed = *p->second;
        e.linear_gemm = linear_gemm_shape(*p->second), e.linear_dtype = p->second->dtype;
      }
      if (!e.module) {
        if (std::string type = classify_module(*p->second); !type.empty())
          e.module = *it, e.module_type = type, e.parsed = *p->second;
      }
    }
  }
  return out;
}

struct Group {
  ProfiledKernel k;
  std::map<std::string, int> nvtx;
  std::map<std::string, double> parts;   // kernel name -> time, for a module candidate
  std::set<const Range*> instances;      // module ranges seen: its calls
  long long launches = 0;                // a module candidate's kernels
  long long range_launches = 0;          // every kernel its ranges launched, those of rows of their own too
  std::map<std::vector<long long>, LinearGemm> linear_gemms;   // a kernel row's time by Linear shape
};

/// The row of a module candidate: "module LlamaRMSNorm" with its type and shape. An "other"
/// module's shape is its first input's.
void start_module_group(Group& g, const Range& range, const ModuleRange& parsed, const std::string& type) {
  g.k.name = parsed.kind + " " + parsed.name;
  g.k.module = parsed.name;
  g.k.type = type;
  g.k.shape = type == "other" ? (parsed.sizes.empty() ? std::vector<long long>{} : parsed.sizes[0]) : module_shape(type, parsed);
  g.k.dtype = parsed.dtype;
  g.k.nvtx = range.name;
}

/// A convolution module (Conv2d, ConvTranspose1d, LazyConv3d, ...): a library may run it as a
/// plain GEMM (cuDNN's 1x1 convolutions are cuBLAS calls), which is still the convolution's work.
bool convolution_module(const ModuleRange& m) { return m.name.find("Conv") != std::string::npos; }

/// The leaf ranges (by text) inside which some kernel is one of autokernel's types: an nn.Linear's
/// GEMM stays a matmul row rather than becoming part of an "other" module; a convolution's does not.
std::set<std::string> leaves_holding_a_type(const std::vector<Enclosing>& enclosing, const std::vector<std::string>& names) {
  std::set<std::string> out;
  for (size_t i = 0; i < enclosing.size(); ++i)
    if (enclosing[i].leaf && !enclosing[i].module && !convolution_module(enclosing[i].leaf_parsed) &&
        classify_kernel(names[i]).type != "other")
      out.insert(enclosing[i].leaf->name);
  return out;
}

/// A gated MLP (a swiglu row) holds its projections' GEMMs too: they keep rows of their own, as an
/// attention module's projections do, so the row is the gate product the swiglu op replaces and
/// the GEMMs stay with the matmul type (cuBLAS).
bool outside_its_module(const std::string& module_type, const std::string& kernel) {
  return module_type == "swiglu" && classify_kernel(kernel).bound == "compute";
}

/// What the records say besides the kernels: each launch call's thread and time (by correlation
/// id), the NVTX ranges, paired start to end, and when the first kernel started.
struct RecordIndex {
  std::map<long long, std::pair<long long, double>> launches;   // corr -> (tid, time)
  std::vector<Range> ranges;
  double first_kernel_ns = -1;
};

/// `gpu` takes the meta record's GPU name, when there is one.
RecordIndex index_records(const std::vector<nlohmann::json>& records, std::string& gpu) {
  RecordIndex index;
  std::map<long long, nlohmann::json> open_markers;
  for (auto& r : records) {
    const std::string k = r.value("k", "");
    if (k == "meta") gpu = r.value("gpu", gpu);
    if (k == "api") index.launches[r.value("corr", 0LL)] = {r.value("tid", 0LL), r.value("start", 0.0)};
    if (k == "kernel") {
      double s = r.value("start", 0.0);
      if (index.first_kernel_ns < 0 || s < index.first_kernel_ns) index.first_kernel_ns = s;
    }
    if (k == "marker") {
      if (r.value("flag", "") == "start") open_markers[r.value("id", 0LL)] = r;
      else if (auto it = open_markers.find(r.value("id", 0LL)); it != open_markers.end()) {
        index.ranges.push_back({it->second.value("tid", 0LL), it->second.value("t", 0.0), r.value("t", 0.0),
                                it->second.value("name", "")});
        open_markers.erase(it);
      }
    }
  }
  return index;
}

/// The kernel records past the warm-up, each with its launch call's (tid, time), (-1, -1) when
/// the call was not recorded.
struct TimedLaunches {
  std::vector<const nlohmann::json*> kernels;
  std::vector<std::pair<long long, double>> launch_at;
};

/// Counts the kernels seen and those left out in `p`.
TimedLaunches launches_after_warmup(const std::vector<nlohmann::json>& records, const RecordIndex& index, double warmup_s,
                                    Profile& p) {
  TimedLaunches out;
  for (auto& r : records) {
    if (r.value("k", "") != "kernel") continue;
    ++p.kernels_seen;
    if ((r.value("start", 0.0) - index.first_kernel_ns) * 1e-9 < warmup_s) {
      ++p.kernels_dropped_in_warmup;
      continue;
    }
    auto it = index.launches.find(r.value("corr", -1LL));
    out.kernels.push_back(&r);
    out.launch_at.push_back(it != index.launches.end() ? it->second : std::pair<long long, double>{-1, -1.0});
  }
  return out;
}

/// The union of the kernels' [start, end) intervals and the span from the first start to the last
/// end, in µs: what the GPU was busy for, and how long it ran.
std::pair<double, double> gpu_busy_and_span_us(const std::vector<const nlohmann::json*>& kernels) {
  std::vector<std::pair<double, double>> intervals;
  for (auto* r : kernels) intervals.push_back({r->value("start", 0.0), r->value("end", 0.0)});
  std::sort(intervals.begin(), intervals.end());
  double busy = 0, reach = -1;
  for (auto [start, end] : intervals) {
    if (end <= reach) continue;
    busy += end - std::max(start, reach);
    reach = end;
  }
  if (intervals.empty()) return {0, 0};
  return {busy / 1000, (reach - intervals.front().first) / 1000};
}

/// Adds one launch of `name`, `us` long, to the row of the kernel itself.
void add_kernel_launch(Group& g, const nlohmann::json& r, const std::string& name, const Enclosing& e, double us) {
  if (g.k.calls == 0) {
    g.k.name = name;
    g.k.grid = r.value("grid", std::vector<int>{});
    g.k.block = r.value("block", std::vector<int>{});
    g.k.registers = r.value("regs", 0);
    g.k.shared_bytes = r.value("smem", 0);
  }
  g.k.total_us += us;
  g.k.calls++;
  if (e.op) g.nvtx[e.op->name]++;
  if (!e.linear_gemm.empty()) {
    LinearGemm& lg = g.linear_gemms[e.linear_gemm];
    lg.shape = e.linear_gemm;
    lg.dtype = e.linear_dtype;
    lg.calls++;
    lg.total_us += us;
  }
}

/// Groups the launches into rows: by the module candidate that holds a launch (a module of one
/// of autokernel's types, or an "other" leaf module), else by the kernel's name.
std::map<std::string, Group> group_launches(const std::vector<const nlohmann::json*>& kernels,
                                            const std::vector<std::string>& names, const std::vector<Enclosing>& enclosing) {
  const std::set<std::string> typed_leaves = leaves_holding_a_type(enclosing, names);
  std::map<std::string, Group> groups;
  std::map<std::string, long long> range_launches;  // by module group key
  for (size_t i = 0; i < kernels.size(); ++i) {
    const nlohmann::json& r = *kernels[i];
    const Enclosing& e = enclosing[i];
    const std::string& name = names[i];
    const double us = (r.value("end", 0.0) - r.value("start", 0.0)) / 1000.0;
    const bool own_row = e.module && outside_its_module(e.module_type, name);
    if (e.module) range_launches["module\n" + e.module_type + "\n" + e.module->name]++;
    const Range* module = own_row ? nullptr
                          : e.module ? e.module
                          : e.leaf && !typed_leaves.count(e.leaf->name) ? e.leaf : nullptr;
    if (!module) {
      add_kernel_launch(groups["kernel\n" + name], r, name, e, us);
      continue;
    }
    const std::string module_type = e.module ? e.module_type : "other";
    Group& g = groups["module\n" + module_type + "\n" + module->name];
    if (g.instances.empty()) start_module_group(g, *module, e.module ? e.parsed : e.leaf_parsed, module_type);
    g.k.total_us += us;
    g.instances.insert(module);
    g.parts[name] += us;
    g.launches++;
  }
  for (auto& [key, n] : range_launches)
    if (auto g = groups.find(key); g != groups.end()) g->second.range_launches = n;
  return groups;
}

/// A group's row: a module candidate's calls (its ranges), bound and parts, largest first; a
/// kernel's classification, dtype, most frequent NVTX range and Linear shapes, largest first.
ProfiledKernel profiled_kernel(const Group& g) {
  ProfiledKernel k = g.k;
  if (!k.module.empty()) {
    k.calls = (long long)g.instances.size();
    k.bound = k.type == "other" || (find_spec(k.type) && find_spec(k.type)->is_memory_bound()) ? "memory" : "compute";
    std::vector<std::pair<double, std::string>> parts;
    for (auto& [n, us] : g.parts) parts.push_back({-us, n});
    std::sort(parts.begin(), parts.end());
    for (auto& [us, n] : parts) k.parts.push_back(n);
    double cpu_ns = 0;
    for (const Range* r : g.instances) cpu_ns += r->end - r->start;
    k.cpu_us_per_call = cpu_ns / 1000 / double(k.calls);
    k.launches_per_call = double(g.launches) / double(k.calls);
    k.range_launches_per_call = double(std::max(g.range_launches, g.launches)) / double(k.calls);
  } else {
    Classification c = classify_kernel(k.name);
    k.type = c.type;
    k.bound = c.bound;
    k.dtype = dtype_hint(k.name);
    int best = 0;
    for (auto& [range, n] : g.nvtx)
      if (n > best) best = n, k.nvtx = range;
    for (auto& [shape, lg] : g.linear_gemms) k.linear_gemms.push_back(lg);
    std::sort(k.linear_gemms.begin(), k.linear_gemms.end(), [](auto& a, auto& b) { return a.total_us > b.total_us; });
  }
  k.mean_us = k.total_us / double(k.calls);
  return k;
}

}  // namespace

Result<std::vector<nlohmann::json>> read_records(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return error(path + ": is a directory, not a file of activity records");
  std::ifstream in(path);
  if (!in) return error(path + ": no activity records (did the program run any CUDA kernel?)");
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;  // a line cut short by a killed program
    out.push_back(std::move(j));
  }
  return out;
}

Result<Profile> build_profile(const std::vector<nlohmann::json>& records, double warmup_s) {
  Profile p;
  p.warmup_s = warmup_s;
  RecordIndex index = index_records(records, p.gpu);
  const TimedLaunches timed = launches_after_warmup(records, index, warmup_s, p);
  const std::vector<Enclosing> enclosing = enclosing_all(index.ranges, timed.launch_at);
  std::vector<std::string> names;
  for (auto* r : timed.kernels) names.push_back(demangle(r->value("name", "?")));
  const std::map<std::string, Group> groups = group_launches(timed.kernels, names, enclosing);
  std::tie(p.gpu_busy_us, p.gpu_span_us) = gpu_busy_and_span_us(timed.kernels);
  for (auto& [key, g] : groups) {
    ProfiledKernel k = profiled_kernel(g);
    p.total_gpu_us += k.total_us;
    p.kernels.push_back(std::move(k));
  }
  if (p.kernels.empty())
    return error("the profile holds no kernel after the warm-up of " + std::to_string(warmup_s) +
                 " s (" + std::to_string(p.kernels_seen) + " seen in all): lower --warmup-s or run the program longer");
  for (auto& k : p.kernels) k.share = k.total_us / p.total_gpu_us;
  std::sort(p.kernels.begin(), p.kernels.end(), [](auto& a, auto& b) { return a.total_us > b.total_us; });
  return p;
}

void to_json(nlohmann::json& j, const Profile& p) {
  j = {{"schema", "autokernel-profile-1"}, {"gpu", p.gpu}, {"command", p.command}, {"wall_seconds", p.wall_seconds},
       {"exit_code", p.exit_code}, {"warmup_s", p.warmup_s}, {"total_gpu_us", p.total_gpu_us},
       {"kernels_seen", p.kernels_seen}, {"kernels_dropped_in_warmup", p.kernels_dropped_in_warmup}};
  if (p.gpu_busy_us >= 0) j["gpu_busy_us"] = p.gpu_busy_us;
  if (p.gpu_span_us >= 0) j["gpu_span_us"] = p.gpu_span_us;
  j["kernels"] = nlohmann::json::array();
  for (auto& k : p.kernels)
    j["kernels"].push_back({{"name", k.name}, {"type", k.type}, {"bound", k.bound}, {"calls", k.calls},
                            {"total_us", k.total_us}, {"mean_us", k.mean_us}, {"share", k.share}, {"nvtx", k.nvtx},
                            {"grid", k.grid}, {"block", k.block}, {"registers", k.registers},
                            {"shared_bytes", k.shared_bytes}, {"dtype", k.dtype}});
  for (size_t i = 0; i < p.kernels.size(); ++i)
    if (!p.kernels[i].module.empty()) {
      auto& row = j["kernels"][i];
      row["module"] = p.kernels[i].module;
      row["shape"] = p.kernels[i].shape;
      row["parts"] = p.kernels[i].parts;
      if (p.kernels[i].cpu_us_per_call >= 0) row["cpu_us_per_call"] = p.kernels[i].cpu_us_per_call;
      if (p.kernels[i].launches_per_call >= 0) row["launches_per_call"] = p.kernels[i].launches_per_call;
      if (p.kernels[i].range_launches_per_call >= 0) row["range_launches_per_call"] = p.kernels[i].range_launches_per_call;
    }
  for (size_t i = 0; i < p.kernels.size(); ++i)
    for (auto& lg : p.kernels[i].linear_gemms)
      j["kernels"][i]["linear_gemms"].push_back(
          {{"shape", lg.shape}, {"dtype", lg.dtype}, {"calls", lg.calls}, {"total_us", lg.total_us}});
}

Result<Profile> profile_from_json(const nlohmann::json& j) {
  const auto schema = j.is_object() ? j.find("schema") : j.end();
  if (!j.is_object() || schema == j.end() || *schema != "autokernel-profile-1")
    return error("not an autokernel profile (expected an object with \"schema\": \"autokernel-profile-1\"; make one with autokernel profile)");
  std::string where;   // the kernel being read, for the message
  try {
    Profile p;
    p.gpu = j.value("gpu", "");
    p.command = j.value("command", std::vector<std::string>{});
    p.wall_seconds = j.value("wall_seconds", 0.0);
    p.exit_code = j.value("exit_code", 0);
    p.warmup_s = j.value("warmup_s", 0.0);
    p.total_gpu_us = j.at("total_gpu_us").get<double>();
    p.gpu_busy_us = j.value("gpu_busy_us", -1.0);
    p.gpu_span_us = j.value("gpu_span_us", -1.0);
    if (!j.at("kernels").is_array()) return error("kernels is a " + std::string(j["kernels"].type_name()) + ": expected an array");
    for (auto& k : j["kernels"]) {
      where = "kernels[" + std::to_string(p.kernels.size()) + "]: ";
      ProfiledKernel x;
      x.name = k.at("name");
      x.type = k.value("type", "other");
      x.bound = k.value("bound", "memory");
      x.calls = k.at("calls");
      x.total_us = k.at("total_us");
      x.mean_us = k.at("mean_us");
      x.share = k.at("share");
      x.nvtx = k.value("nvtx", "");
      x.grid = k.value("grid", std::vector<int>{});
      x.block = k.value("block", std::vector<int>{});
      x.registers = k.value("registers", 0);
      x.shared_bytes = k.value("shared_bytes", 0);
      x.dtype = k.value("dtype", "");
      x.module = k.value("module", "");
      x.shape = k.value("shape", std::vector<long long>{});
      x.parts = k.value("parts", std::vector<std::string>{});
      x.cpu_us_per_call = k.value("cpu_us_per_call", -1.0);
      x.launches_per_call = k.value("launches_per_call", -1.0);
      x.range_launches_per_call = k.value("range_launches_per_call", -1.0);
      if (auto lg = k.find("linear_gemms"); lg != k.end())
        for (auto& g : lg->get_ref<const nlohmann::json::array_t&>()) {
          LinearGemm y{g.at("shape").get<std::vector<long long>>(), g.value("dtype", ""), g.at("calls"), g.at("total_us")};
          if (y.shape.size() != 4) return error(where + "linear_gemms: a shape is [M, N, K, has_bias]");
          x.linear_gemms.push_back(std::move(y));
        }
      p.kernels.push_back(std::move(x));
    }
    return p;
  } catch (const std::exception& e) {
    return error(where + "a profile field is missing or of the wrong type: " + e.what());
  }
}

Result<Profile> read_profile(const std::string& path) {
  auto text = read_nonempty_file_text(path);
  if (!text) return error(text.error().message + " (a profile: make one with autokernel profile)");
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded()) return error(path + ": not JSON (a profile: make one with autokernel profile)");
  auto p = profile_from_json(j);
  if (!p) return error(path + ": " + p.error().message);
  return p;
}

std::string profile_table(const Profile& p, size_t top) {
  char line[512];
  std::snprintf(line, sizeof line, "%zu kernels, %.1f ms of GPU time%s%s\n rank  share   total ms   calls    mean us  type              name\n",
                p.kernels.size(), p.total_gpu_us / 1000, p.gpu.empty() ? "" : " on ", p.gpu.c_str());
  std::string out = line;
  for (size_t i = 0; i < p.kernels.size() && i < top; ++i) {
    const ProfiledKernel& k = p.kernels[i];
    // Names come from the profiled program or a profile file: shown, never obeyed by the terminal.
    const std::string shown = terminal_safe(k.name);
    const std::string name = shown.size() > 90 ? shown.substr(0, 87) + "..." : shown;
    std::snprintf(line, sizeof line, "%5zu %5.1f%% %10.3f %7lld %10.2f  %-16s  %s\n", i + 1, k.share * 100,
                  k.total_us / 1000, k.calls, k.mean_us, terminal_safe(k.type).c_str(), name.c_str());
    out += line;
  }
  return out;
}

std::vector<std::vector<long long>> nvtx_shapes(const std::string& range) {
  static const std::regex sizes(R"(sizes\s*=\s*\[(\[[0-9,\s]*\](\s*,\s*\[[0-9,\s]*\])*)\])");
  std::smatch m;
  std::vector<std::vector<long long>> shapes;
  if (!std::regex_search(range, m, sizes)) return shapes;
  const std::string lists = m[1];
  static const std::regex list(R"(\[([0-9,\s]*)\])"), num(R"(\d+)");
  for (auto it = std::sregex_iterator(lists.begin(), lists.end(), list); it != std::sregex_iterator(); ++it) {
    const std::string inner = (*it)[1];
    std::vector<long long> dims;
    long long elements = 1;   // of the dimensions other than 0: what any product of them is below
    for (auto n = std::sregex_iterator(inner.begin(), inner.end(), num); n != std::sregex_iterator(); ++n) {
      auto d = parse_integer(n->str());
      if (!d || (*d > 0 && __builtin_mul_overflow(elements, *d, &elements)) || elements > kMaxNvtxElements) {
        spdlog::warn("an NVTX range gives the size {} in [{}]: no tensor has so many elements; its shapes are left unread "
                     "(the row has no shape)", untrusted_line(n->str(), 40), untrusted_line(inner, 120));
        return {};
      }
      dims.push_back(*d);
    }
    shapes.push_back(dims);
  }
  return shapes;
}

std::vector<long long> nvtx_first_shape(const std::string& range) {
  auto all = nvtx_shapes(range);
  return all.empty() ? std::vector<long long>{} : all.front();
}

}  // namespace ak
