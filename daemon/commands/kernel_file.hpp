#pragma once
/// Reading the kernel file a command was given, or one of the type's embedded structures.
#include <string>

#include "common/result.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// `--spec TYPE.toml` of a command: loads the user type, registers it beside the built-in types and
/// makes it the command's type (an Error when `--kernel` names another). Nothing when path is empty.
Status use_user_spec(const std::string& path, std::string& type);

/// The spec of `type`, or an Error listing the known types.
Result<const KernelSpec*> spec_for(const std::string& type);
/// The file's text; "starter" (or empty) gives the type's embedded starter, and the name of one
/// of its variants (when no such file exists) that variant.
Result<std::string> read_kernel_file(const std::string& path, const KernelSpec& spec);

}  // namespace ak
