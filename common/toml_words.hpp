#pragma once
/// What a TOML value is, in the words an error message uses ("is a string: expected an integer"):
/// shared by the config and the user-type spec, whose errors read alike.
#include <string>

#include <toml++/toml.h>

namespace ak {

inline std::string toml_value_kind(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date or time";
  }
}

}  // namespace ak
