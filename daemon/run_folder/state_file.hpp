#pragma once
/// state.json read back: the summary the daemon rewrites after each row, as status, report,
/// export and the daemon's own start read it. Its shape is checked once here, so that no reader
/// meets a string where it reads a number, or a number where it reads an object.
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace ak {

/// `path` read and checked (check_state_shape). Absent: an empty object, as for a run that has
/// written none yet. Any other failure is an Error naming the file and what to do.
Result<nlohmann::json> read_state_file(const std::string& path);

/// Checks that `state` is an object whose every known field, where present, has the type the
/// daemon writes: numbers (or null, which the daemon writes for a NaN and a reader takes as
/// absent: removed here), strings, `gpus` and `kernels` arrays of objects, a kernel's `tag` a
/// plain name. The Error names `path` and the field: "kernels[1].best_us is a string: expected a
/// number".
Status check_state_shape(nlohmann::json& state, const std::string& path);

}  // namespace ak
