#include "common/untrusted_text.hpp"

#include <cstdio>

namespace ak {
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";   // U+FFFD

}  // namespace

size_t utf8_sequence_at(std::string_view s, size_t i, char32_t* cp) {
  const unsigned char b = static_cast<unsigned char>(s[i]);
  size_t n;
  char32_t c, min;
  if (b < 0x80) return *cp = b, 1;
  if (b >= 0xC2 && b <= 0xDF) n = 2, c = b & 0x1F, min = 0x80;
  else if (b >= 0xE0 && b <= 0xEF) n = 3, c = b & 0x0F, min = 0x800;
  else if (b >= 0xF0 && b <= 0xF4) n = 4, c = b & 0x07, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const unsigned char t = static_cast<unsigned char>(s[i + k]);
    if ((t & 0xC0) != 0x80) return 0;
    c = (c << 6) | (t & 0x3F);
  }
  if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
  return *cp = c, n;
}

bool is_invisible_control(char32_t c) {
  return c == 0x7F || (c >= 0x80 && c <= 0x9F) || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) ||
         c == 0x2028 || c == 0x2029 || c == 0xFEFF;
}

namespace {

std::string trim_spaces(std::string s) {
  const size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string clean(std::string_view s, size_t max_bytes, bool keep_lines) {
  const std::string v = valid_utf8(s);
  std::string out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size();) {
    char32_t c = 0;
    const size_t n = utf8_sequence_at(v, i, &c);   // never 0: v is valid
    if (c == '\t' || c == '\n') out += keep_lines ? char(c) : ' ';
    else if (c == '\r') out += keep_lines ? "" : " ";
    else if (c >= 0x20 && !is_invisible_control(c)) out.append(v, i, n);
    i += n;
  }
  return cap_utf8(keep_lines ? out : trim_spaces(out), max_bytes);
}

}  // namespace

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char32_t c;
    if (const size_t n = utf8_sequence_at(s, i, &c)) out.append(s.substr(i, n)), i += n;
    else out += kReplacement, i += 1;
  }
  return out;
}

std::string cap_utf8(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  const size_t room = max_bytes >= 3 ? max_bytes - 3 : 0;
  size_t cut = room;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;   // back to a lead byte
  return std::string(s.substr(0, cut)) + std::string("...").substr(0, max_bytes - cut > 3 ? 3 : max_bytes - cut);
}

std::string untrusted_line(std::string_view s, size_t max_bytes) { return clean(s, max_bytes, false); }

std::string untrusted_text(std::string_view s, size_t max_bytes) { return clean(s, max_bytes, true); }

std::optional<std::string> kernel_file_problem(std::string_view source) {
  size_t line = 1;
  for (size_t i = 0; i < source.size();) {
    char32_t c;
    const size_t n = utf8_sequence_at(source, i, &c);
    if (n == 0)
      return "line " + std::to_string(line) + " holds bytes that are not UTF-8: a kernel file is plain text";
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F || (c >= 0x80 && c <= 0x9F)) {
      char code[16];
      std::snprintf(code, sizeof code, "U+%04X", unsigned(c));
      return "line " + std::to_string(line) + " holds the control character " + code +
             ": a kernel file is plain text (only tabs and line breaks)";
    }
    if (c == '\n') ++line;
    i += n;
  }
  return std::nullopt;
}

}  // namespace ak
