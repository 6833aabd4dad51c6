#pragma once
/// The one writer of a user type's spec: a UserTypeSpec as the TOML text that parse_user_type()
/// (kernels_cuda/user_type_reader.cpp) reads back into the same fields and values. Whatever
/// writes a spec (`autokernel kernelbench`, `autokernel plan --user-types`) builds the struct
/// and calls this, so the format has one owner on each side.
#include <map>
#include <string>
#include <vector>

#include "kernels_cuda/user_type.hpp"

namespace ak {

/// What a producer says in a spec beside its fields, for the user who edits it: where the file
/// came from, and notes on a value. Each text is one line; control characters become '?'.
struct UserTypeComments {
  std::vector<std::string> header;                          ///< lines above the first key
  std::map<std::string, std::string> beside;                ///< a top-level key -> a comment ending its line
  std::map<std::string, std::vector<std::string>> below;    ///< a top-level key, or "fixed" -> lines after it
};

/// The spec's TOML: the fields a spec file holds (not path, text nor the sources, which are not in
/// it), each written explicitly where the reader would otherwise default it (dtypes, metric,
/// stability, determinism); summary, starter and bench only when set, flops when not "0",
/// [tolerance] and [fixed] when they hold something. A [fixed] value is written in the form the
/// reader keeps it: a number as it is, True and False as booleans, a JSON-quoted text as a TOML
/// string; any other text, which no TOML value reads back as, is written as a TOML string of it.
std::string user_type_toml(const UserTypeSpec& spec, const UserTypeComments& comments = {});

}  // namespace ak
