#include "daemon/profile/profile_data.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>

#include "daemon/profile/kernel_classifier.hpp"

namespace ak {
namespace {

struct Range {
  long long tid;
  double start, end;
  std::string name;
};

/// The innermost range on thread `tid` open at time t.
const Range* enclosing(const std::vector<Range>& ranges, long long tid, double t) {
  const Range* best = nullptr;
  for (auto& r : ranges)
    if (r.tid == tid && r.start <= t && t <= r.end && (!best || r.start >= best->start)) best = &r;
  return best;
}

}  // namespace

Result<std::vector<nlohmann::json>> read_records(const std::string& path) {
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
  std::map<long long, std::pair<long long, double>> launches;   // corr -> (tid, time)
  std::map<long long, nlohmann::json> open_markers;
  std::vector<Range> ranges;
  double first = -1;
  for (auto& r : records) {
    const std::string k = r.value("k", "");
    if (k == "meta") p.gpu = r.value("gpu", p.gpu);
    if (k == "api") launches[r.value("corr", 0LL)] = {r.value("tid", 0LL), r.value("start", 0.0)};
    if (k == "kernel") {
      double s = r.value("start", 0.0);
      if (first < 0 || s < first) first = s;
    }
    if (k == "marker") {
      if (r.value("flag", "") == "start") open_markers[r.value("id", 0LL)] = r;
      else if (auto it = open_markers.find(r.value("id", 0LL)); it != open_markers.end()) {
        ranges.push_back({it->second.value("tid", 0LL), it->second.value("t", 0.0), r.value("t", 0.0),
                          it->second.value("name", "")});
        open_markers.erase(it);
      }
    }
  }
  struct Group {
    ProfiledKernel k;
    std::map<std::string, int> nvtx;
  };
  std::map<std::string, Group> groups;
  for (auto& r : records) {
    if (r.value("k", "") != "kernel") continue;
    ++p.kernels_seen;
    const double start = r.value("start", 0.0), end = r.value("end", 0.0);
    if ((start - first) * 1e-9 < warmup_s) {
      ++p.kernels_dropped_in_warmup;
      continue;
    }
    const std::string name = demangle(r.value("name", "?"));
    Group& g = groups[name];
    if (g.k.calls == 0) {
      g.k.name = name;
      g.k.grid = r.value("grid", std::vector<int>{});
      g.k.block = r.value("block", std::vector<int>{});
      g.k.registers = r.value("regs", 0);
      g.k.shared_bytes = r.value("smem", 0);
    }
    g.k.calls++;
    g.k.total_us += (end - start) / 1000.0;
    if (auto it = launches.find(r.value("corr", -1LL)); it != launches.end())
      if (const Range* range = enclosing(ranges, it->second.first, it->second.second)) g.nvtx[range->name]++;
  }
  for (auto& [name, g] : groups) {
    ProfiledKernel k = g.k;
    k.mean_us = k.total_us / double(k.calls);
    Classification c = classify_kernel(name);
    k.type = c.type;
    k.bound = c.bound;
    k.dtype = dtype_hint(name);
    int best = 0;
    for (auto& [range, n] : g.nvtx)
      if (n > best) best = n, k.nvtx = range;
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
  j["kernels"] = nlohmann::json::array();
  for (auto& k : p.kernels)
    j["kernels"].push_back({{"name", k.name}, {"type", k.type}, {"bound", k.bound}, {"calls", k.calls},
                            {"total_us", k.total_us}, {"mean_us", k.mean_us}, {"share", k.share}, {"nvtx", k.nvtx},
                            {"grid", k.grid}, {"block", k.block}, {"registers", k.registers},
                            {"shared_bytes", k.shared_bytes}, {"dtype", k.dtype}});
}

Result<Profile> profile_from_json(const nlohmann::json& j) {
  if (j.value("schema", "") != "autokernel-profile-1")
    return error("not an autokernel profile (expected \"schema\": \"autokernel-profile-1\"; make one with autokernel profile)");
  try {
    Profile p;
    p.gpu = j.value("gpu", "");
    p.command = j.value("command", std::vector<std::string>{});
    p.wall_seconds = j.value("wall_seconds", 0.0);
    p.exit_code = j.value("exit_code", 0);
    p.warmup_s = j.value("warmup_s", 0.0);
    p.total_gpu_us = j.at("total_gpu_us").get<double>();
    for (auto& k : j.at("kernels")) {
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
      p.kernels.push_back(std::move(x));
    }
    return p;
  } catch (const std::exception& e) {
    return error(std::string("a profile field is missing or of the wrong type: ") + e.what());
  }
}

std::string profile_table(const Profile& p, size_t top) {
  char line[512];
  std::snprintf(line, sizeof line, "%zu kernels, %.1f ms of GPU time%s%s\n rank  share   total ms   calls    mean us  type              name\n",
                p.kernels.size(), p.total_gpu_us / 1000, p.gpu.empty() ? "" : " on ", p.gpu.c_str());
  std::string out = line;
  for (size_t i = 0; i < p.kernels.size() && i < top; ++i) {
    const ProfiledKernel& k = p.kernels[i];
    std::string name = k.name.size() > 90 ? k.name.substr(0, 87) + "..." : k.name;
    std::snprintf(line, sizeof line, "%5zu %5.1f%% %10.3f %7lld %10.2f  %-16s  %s\n", i + 1, k.share * 100,
                  k.total_us / 1000, k.calls, k.mean_us, k.type.c_str(), name.c_str());
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
    for (auto n = std::sregex_iterator(inner.begin(), inner.end(), num); n != std::sregex_iterator(); ++n)
      dims.push_back(std::stoll(n->str()));
    shapes.push_back(dims);
  }
  return shapes;
}

std::vector<long long> nvtx_first_shape(const std::string& range) {
  auto all = nvtx_shapes(range);
  return all.empty() ? std::vector<long long>{} : all.front();
}

}  // namespace ak
