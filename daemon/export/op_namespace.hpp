#pragma once
/// The op namespace of one hf-kernels build (torch.ops.<namespace>, and the `id` of its
/// metadata.json): the Hugging Face `kernels` library loads several builds of a kernel into one
/// process, so each build registers its ops under a name of its own.
#include <string>

#include "daemon/export/export_package.hpp"

namespace ak {

/// "_autokernel_" and 16 hex digits: a digest of the package's files mixed with a random value, so
/// that two builds, even of the same files, never register the same ops.
std::string build_op_namespace(const PackageFiles& files);

/// Whether `name` has the form build_op_namespace gives.
bool is_op_namespace(const std::string& name);

}  // namespace ak
