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

/// JSON text of `j` that never throws: a string that is not UTF-8 is written with U+FFFD.
std::string json_dump(const nlohmann::json& j, int indent = -1);

}  // namespace ak
