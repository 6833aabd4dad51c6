#pragma once
/// Where text from outside becomes data. Every text an LLM decides, directly (a reply's
/// description) or through the compiler (an NVRTC log of a file it wrote) or its provider (an
/// error body), passes here once before anything stores, logs or re-sends it: valid UTF-8 (each
/// invalid byte becomes U+FFFD), control characters removed (NUL, ESC, DEL, C1, the rest of C0,
/// and the bidirectional overrides that reorder what a reader sees), cut only at a character
/// boundary, capped. The writers escape for their own formats as well (common/text_escape.hpp):
/// nothing downstream relies on the cleaning alone.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace ak {

/// The length of the well-formed UTF-8 sequence at s[i], with its code point in *cp; 0 when
/// malformed (a stray continuation byte, a truncated sequence, an overlong form, a surrogate,
/// past U+10FFFF). Every reader of outside text decodes with this one.
size_t utf8_sequence_at(std::string_view s, size_t i, char32_t* cp);

/// Characters that steer a terminal or reorder what a reader sees, beside the C0 controls: DEL,
/// the C1 controls, the bidirectional overrides and isolates, the line and paragraph separators,
/// the byte-order mark.
bool is_invisible_control(char32_t c);

/// Each byte that does not begin a well-formed UTF-8 sequence (overlong forms, surrogates and
/// code points over U+10FFFF included) becomes U+FFFD.
std::string valid_utf8(std::string_view s);

/// At most `max_bytes` bytes of valid UTF-8 `s`, cut before a whole character, with "..." in the
/// cap when the text was longer.
std::string cap_utf8(std::string_view s, size_t max_bytes);

/// One line of outside text (a description, an error message): valid UTF-8, tabs and line breaks
/// turned into spaces, every other control character removed, spaces at the ends trimmed, capped.
std::string untrusted_line(std::string_view s, size_t max_bytes);

/// Outside text of several lines (a compile log): as untrusted_line, but tabs and line feeds are
/// kept (a CR is dropped).
std::string untrusted_text(std::string_view s, size_t max_bytes);

/// Why a kernel file cannot be taken: a control character other than tab, CR and LF (a NUL, an
/// ESC), or bytes that are not UTF-8; nullopt for a file that is plain text.
std::optional<std::string> kernel_file_problem(std::string_view source);

/// The caps the daemon uses: a description in one row, a message of the harness or the provider,
/// the part of a compile log that goes into the next prompt.
inline constexpr size_t kDescriptionBytes = 200;
inline constexpr size_t kMessageBytes = 600;
inline constexpr size_t kCompileLogBytes = 1500;

}  // namespace ak
