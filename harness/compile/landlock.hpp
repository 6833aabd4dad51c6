#pragma once
/// Linux's Landlock, where the kernel offers it: the second line of the compile sandbox. It binds
/// the calling process (and its threads and children, for good) to reading files and folders
/// under one folder, at the system-call level, so it holds even for a path the file guard never
/// sees. Kernels without it (before 5.13, or with the LSM off) answer with an error that says so.
#include <string>

#include "common/result.hpp"

namespace ak {

/// After this, the process can read nothing but `root`'s tree and can write, create, remove or
/// execute no file by path (descriptors already open stay usable). An Error says why not.
Status restrict_filesystem_to(const std::string& root);

}  // namespace ak
