#include "harness/module/entry_parameters.hpp"

#include "harness/module/tensor_maps.hpp"

namespace ak {

std::vector<size_t> expected_parameter_sizes(const KernelSpec& spec, bool with_tensor_maps) {
  std::vector<size_t> out;
  for (const ArgSpec& a : spec.args) out.push_back(a.is_buffer() ? sizeof(void*) : 4);
  if (with_tensor_maps) out.push_back(sizeof(TensorMapsParam));
  return out;
}

std::string parameter_mismatch(const KernelSpec& spec, bool with_tensor_maps, const std::vector<size_t>& expected,
                               const std::vector<size_t>& actual) {
  const std::string maps_note =
      with_tensor_maps ? " and, because the file declares ak_tensor_maps, a last parameter "
                         "'const __grid_constant__ ak_tensor_map_args maps' of 1088 bytes"
                       : " (a file that declares no ak_tensor_maps takes no maps parameter)";
  if (actual.size() != expected.size())
    return "the entry point takes " + std::to_string(actual.size()) + " parameters; the harness passes " +
           std::to_string(expected.size()) + ": " + spec.abi() + maps_note;
  for (size_t i = 0; i < expected.size(); ++i)
    if (actual[i] != expected[i]) {
      const std::string name = i < spec.args.size() ? "'" + spec.args[i].name + "'" : "the tensor maps";
      return "parameter " + std::to_string(i + 1) + " (" + name + ") is " + std::to_string(actual[i]) +
             " bytes; the harness passes " + std::to_string(expected[i]) + ": " + spec.abi() + maps_note;
    }
  return "";
}

Result<std::vector<size_t>> function_parameter_sizes(const CudaDriver& driver, CUfunction f) {
  std::vector<size_t> out;
  for (size_t i = 0; i < 4096; ++i) {
    size_t offset = 0, size = 0;
    CUresult r = driver.cuFuncGetParamInfo(f, i, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) return out;   // past the last parameter
    if (auto s = cu_check(r, "reading parameter " + std::to_string(i + 1) + " of the entry point"); !s) return s.error();
    out.push_back(size);
  }
  return error("the entry point reports more than 4096 parameters");
}

}  // namespace ak
