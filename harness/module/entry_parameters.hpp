#pragma once
/// The entry point's parameters as the compiled module has them, checked against the spec's ABI
/// (and the tensor maps' parameter when the file declares maps): a file whose entry takes other
/// arguments than the harness passes would read garbage, so it is refused at load by name.
#include <string>
#include <vector>

#include "common/result.hpp"
#include "harness/gpu/cuda_driver.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// The size in bytes of each parameter the harness passes, in order: a pointer per buffer, 4 bytes
/// per dimension or constant, and the tensor maps last when `with_tensor_maps`.
std::vector<size_t> expected_parameter_sizes(const KernelSpec& spec, bool with_tensor_maps);

/// "" when `actual` matches `expected`; else the first difference, as a sentence that says what to
/// write.
std::string parameter_mismatch(const KernelSpec& spec, bool with_tensor_maps, const std::vector<size_t>& expected,
                               const std::vector<size_t>& actual);

/// The sizes of f's parameters, from the driver (cuFuncGetParamInfo).
Result<std::vector<size_t>> function_parameter_sizes(const CudaDriver& driver, CUfunction f);

}  // namespace ak
