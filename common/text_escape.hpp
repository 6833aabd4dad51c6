#pragma once
/// Each writer's own escaping, for any text (cleaned or not): what makes a results row, a log
/// line, a JSON file, an SVG or a markdown table hold outside text as text, whatever it says.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ak {

/// A field of a tab-separated row: tabs, line breaks and the other control characters become
/// spaces, so the row keeps its columns and its line.
std::string tsv_field(std::string_view s);

/// For a terminal or a log line: control characters (C0, DEL, C1, ESC above all) shown as
/// \n, \t, \xHH or \u00HH instead of acting; invalid UTF-8 bytes as \xHH.
std::string terminal_safe(std::string_view s);

/// For XML and HTML text and attribute values: & < > " ' as entities, and the characters XML 1.0
/// cannot hold (C0 controls but tab and line breaks) dropped.
std::string xml_escape(std::string_view s);

/// For a cell of a markdown table: one line, markdown punctuation backslash-escaped (no link, no
/// image, no emphasis, no cell of its own) and HTML as entities.
std::string markdown_cell(std::string_view s);

/// A TOML basic string, quotes included, holding `s` as text whatever it says: quotes and
/// backslashes escaped, every control character (C0, DEL, C1, the bidirectional overrides) as \b,
/// \t, \n, \f, \r or \uXXXX, and bytes that are not UTF-8 as U+FFFD (a TOML file is UTF-8
/// throughout). A line break in `s` cannot start a table or a key, nor the file steer a terminal.
std::string toml_string(std::string_view s);

/// Text for a TOML comment, after its '#': one line of valid UTF-8, each control character
/// (C0, DEL, C1, the bidirectional overrides) shown as '?', so the comment ends where it began.
std::string toml_comment(std::string_view s);

/// JSON text of `j` that never throws: a string that is not UTF-8 is written with U+FFFD.
std::string json_dump(const nlohmann::json& j, int indent = -1);

}  // namespace ak
