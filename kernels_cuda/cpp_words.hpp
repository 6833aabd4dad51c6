#pragma once
/// The words a name in a kernel file's contract cannot be: a user type's tensors and dims and a
/// launch plan's steps and scratch buffers become the names of functions and parameters there.
#include <string>

namespace ak {

/// A C++ keyword, a CUDA builtin variable or type a kernel uses (blockIdx, half, ...), or a name
/// the implementation owns (a leading "__").
bool is_cpp_word(const std::string& s);

}  // namespace ak
