#include "kernels_cuda/variants.hpp"

#include <map>

namespace ak {

const std::map<std::string, std::string>& embedded_starters();

namespace {

/// The (name, story) of a first line "// <type> variant <name>: <story>"; empty name when the
/// line is not one.
std::pair<std::string, std::string> parse_first_line(const std::string& source) {
  const std::string line = source.substr(0, source.find('\n'));
  const std::string tag = " variant ";
  if (line.rfind("// ", 0) != 0) return {};
  const size_t at = line.find(tag);
  const size_t colon = line.find(": ", at == std::string::npos ? 0 : at);
  if (at == std::string::npos || colon == std::string::npos) return {};
  const std::string type = line.substr(3, at - 3);
  const std::string name = line.substr(at + tag.size(), colon - at - tag.size());
  if (type.empty() || name.empty() || name.find(' ') != std::string::npos || type.find(' ') != std::string::npos) return {};
  return {name, line.substr(colon + 2)};
}

}  // namespace

std::string variant_name(const std::string& source) {
  auto [name, story] = parse_first_line(source);
  return name.empty() ? "starter" : name;
}

std::vector<KernelVariant> kernel_variants(const std::string& type) {
  std::vector<KernelVariant> out;
  const auto& files = embedded_starters();
  auto starter = files.find(type + "/" + type + ".cu");
  if (starter == files.end()) return out;
  out.push_back({"starter", "the starter: the plain structure the loop begins from", &starter->second});
  const std::string prefix = type + "/variants/";
  for (auto it = files.lower_bound(prefix); it != files.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    auto [name, story] = parse_first_line(it->second);
    const std::string file_name = it->first.substr(prefix.size(), it->first.size() - prefix.size() - 3);
    out.push_back({name.empty() ? file_name : name, story, &it->second});
  }
  return out;
}

}  // namespace ak
