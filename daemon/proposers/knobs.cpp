#include "daemon/proposers/knobs.hpp"

#include <regex>
#include <sstream>

#include "common/parse_number.hpp"

namespace ak {
namespace {
const std::regex kKnobLine(R"(^([ \t]*#[ \t]*define[ \t]+)(AK_[A-Z0-9_]+)([ \t]+)(-?\d+)\b)");
}

Knobs read_knobs(const std::string& source) {
  Knobs k;
  std::istringstream in(source);
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, kKnobLine))
      if (auto v = parse_integer(m[4].str())) k[m[2]] = *v;   // a value past a long long is no knob the tuner moves
  return k;
}

std::string with_knob(const std::string& source, const std::string& name, long long value) {
  std::istringstream in(source);
  std::string out, line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, kKnobLine) && m[2] == name)
      line = m[1].str() + name + m[3].str() + std::to_string(value) + line.substr(size_t(m.length(0)));
    out += line + "\n";
  }
  if (!source.empty() && source.back() != '\n') out.pop_back();
  return out;
}

std::string knob_key(const Knobs& k) {
  std::string s;
  for (auto& [name, v] : k) s += (s.empty() ? "" : " ") + name + "=" + std::to_string(v);
  return s;
}

}  // namespace ak
