#include "common/text_escape.hpp"

#include <algorithm>
#include <cstdio>

#include "common/untrusted_text.hpp"

namespace ak {
namespace {

std::string hex_byte(unsigned char b, const char* form) {
  char buf[12];
  std::snprintf(buf, sizeof buf, form, unsigned(b));
  return buf;
}

}  // namespace

std::string tsv_field(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  return out;
}

std::string terminal_safe(std::string_view s) {
  const std::string v = valid_utf8(s);   // what was not UTF-8 shows as U+FFFD
  std::string out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const unsigned char b = static_cast<unsigned char>(v[i]);
    if (b == '\n') out += "\\n";
    else if (b == '\t') out += "\\t";
    else if (b < 0x20 || b == 0x7F) out += hex_byte(b, "\\x%02x");
    else if (b == 0xC2 && i + 1 < v.size() && static_cast<unsigned char>(v[i + 1]) <= 0x9F)
      out += hex_byte(static_cast<unsigned char>(v[++i]), "\\u%04x");   // a C1 control (U+0080..U+009F)
    else out += char(b);
  }
  return out;
}

std::string xml_escape(std::string_view s) {
  const std::string v = valid_utf8(s);
  std::string out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') break;   // not XML 1.0
        if (static_cast<unsigned char>(c) == 0xEF && v.compare(i, 3, "\xEF\xBF\xBE") == 0) { i += 2; break; }   // U+FFFE
        if (static_cast<unsigned char>(c) == 0xEF && v.compare(i, 3, "\xEF\xBF\xBF") == 0) { i += 2; break; }   // U+FFFF
        out += c;
    }
  }
  return out;
}

std::string markdown_cell(std::string_view s) {
  const std::string v = untrusted_line(s, s.size() + 3);
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\\': case '`': case '*': case '_': case '[': case ']': case '!': case '|': case '~': case '#':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

std::string toml_string(std::string_view s) {
  const std::string v = valid_utf8(s);
  std::string out = "\"";
  out.reserve(v.size() + 2);
  for (size_t i = 0; i < v.size();) {
    char32_t cp = 0;
    const size_t n = std::max<size_t>(1, utf8_sequence_at(v, i, &cp));
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      default:
        if (cp < 0x20 || is_invisible_control(cp)) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
          out += buf;
        } else {
          out.append(v, i, n);
        }
    }
    i += n;
  }
  return out + "\"";
}

std::string toml_comment(std::string_view s) {
  const std::string v = valid_utf8(s);
  std::string out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size();) {
    char32_t cp = 0;
    const size_t n = std::max<size_t>(1, utf8_sequence_at(v, i, &cp));
    out += cp < 0x20 || is_invisible_control(cp) ? std::string("?") : v.substr(i, n);
    i += n;
  }
  return out;
}

std::string json_dump(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ak
