#include "daemon/export/op_namespace.hpp"

#include <cstdint>
#include <cctype>
#include <cstdio>
#include <random>

namespace ak {
namespace {

constexpr const char* kPrefix = "_autokernel_";

/// FNV-1a, 64 bits: enough to tell packages apart in a name; the random value makes it unique.
uint64_t fnv1a(uint64_t h, const std::string& text) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

std::string build_op_namespace(const PackageFiles& files) {
  uint64_t h = 14695981039346656037ull;
  for (auto& [path, text] : files) h = fnv1a(fnv1a(h, path), text);
  std::random_device random;
  h ^= (uint64_t(random()) << 32) ^ uint64_t(random());
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return kPrefix + std::string(hex);
}

bool is_op_namespace(const std::string& name) {
  const std::string prefix = kPrefix;
  if (name.size() != prefix.size() + 16 || name.compare(0, prefix.size(), prefix) != 0) return false;
  for (size_t i = prefix.size(); i < name.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i])) || std::isupper(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

}  // namespace ak
