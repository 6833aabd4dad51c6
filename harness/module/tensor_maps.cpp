#include "harness/module/tensor_maps.hpp"

#include <cstring>

namespace ak {
namespace {

std::string map_name(int i, const TensorMapDecl& m, const KernelSpec& spec) {
  const bool known = m.operand >= 0 && m.operand < int(spec.args.size());
  return "ak_tensor_maps[" + std::to_string(i) + "] (" + (known ? spec.args[size_t(m.operand)].name : "operand " + std::to_string(m.operand)) + ")";
}

/// A map sees T for the type's own operands and for scratch (a kernel may keep its scratch in T);
/// other operands keep their fixed element type.
bool mapped_as_t(const ArgSpec& a) { return a.elem == Elem::T || a.kind == ArgSpec::Scratch; }
size_t mapped_elem_bytes(const ArgSpec& a, DType d) { return mapped_as_t(a) ? dtype_size(d) : elem_size(a.elem, d); }

/// Why the box of `m` cannot be built in dtype d, whatever the shape; "" when it can.
std::string box_problem(const TensorMapDecl& m, const ArgSpec& a, DType d) {
  return ak_tensor_map_box_problem(m, mapped_elem_bytes(a, d), dtype_name(d));
}

/// The rules that hold whatever the shape; "" when the declaration keeps them.
std::string static_problem(const TensorMapDecl& m, const KernelSpec& spec) {
  if (m.operand < 0 || m.operand >= int(spec.args.size()))
    return "operand " + std::to_string(m.operand) + " is not an argument of " + spec.entry + " (0 to " +
           std::to_string(spec.args.size() - 1) + ")";
  const ArgSpec& a = spec.args[size_t(m.operand)];
  if (!a.is_buffer()) return "'" + a.name + "' is not a buffer: only buffer arguments can be mapped";
  if (!a.row_length) return "'" + a.name + "' has no row length in the " + spec.type + " spec, so it cannot be mapped";
  if (a.elem == Elem::I64 && a.kind != ArgSpec::Scratch) return "'" + a.name + "' holds int64 values, which TMA does not map here";
  if (std::string why = ak_tensor_map_decl_problem(m); !why.empty()) return why;
  // A box that fits some of the type's dtypes is built in those only (matmul's 64 columns of K
  // are one 128-byte swizzle row in fp16, two in fp32); one that fits none is a mistake.
  std::string why;
  for (DType d : spec.dtypes) {
    why = box_problem(m, a, d);
    if (why.empty()) return "";
  }
  return why;
}

/// Int64 operands are refused at load unless mapped as T (static_problem), so every case is here.
CUtensorMapDataType tma_type(const ArgSpec& a, DType d) {
  if (mapped_as_t(a)) return ak_tensor_map_type_of_dtype(d == DType::F16 ? 0 : d == DType::BF16 ? 1 : 2);
  return a.elem == Elem::U32 ? CU_TENSOR_MAP_DATA_TYPE_UINT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

}  // namespace

Result<std::vector<TensorMapDecl>> parse_tensor_maps(const std::vector<int>& ints, const KernelSpec& spec) {
  if (ints.empty() || ints.size() % kTensorMapFields)
    return error(std::string(kTensorMapsSymbol) + " holds " + std::to_string(ints.size()) +
                 " ints: declare it as extern \"C\" __constant__ int " + kTensorMapsSymbol +
                 "[N][5] = {{operand, box_cols, box_rows, swizzle, l2_promotion}, ...}");
  const size_t n = ints.size() / kTensorMapFields;
  if (n > size_t(kMaxTensorMaps))
    return error(std::string(kTensorMapsSymbol) + " declares " + std::to_string(n) + " maps: at most " +
                 std::to_string(kMaxTensorMaps));
  std::vector<TensorMapDecl> out;
  for (size_t i = 0; i < n; ++i) {
    const int* f = &ints[i * kTensorMapFields];
    TensorMapDecl m{f[0], f[1], f[2], f[3], f[4]};
    if (std::string why = static_problem(m, spec); !why.empty())
      return error(map_name(int(i), m, spec) + ": " + why + " (docs/kernel-contract.md, tensor maps)");
    out.push_back(m);
  }
  return out;
}

TensorMapView tensor_map_view(const KernelSpec& spec, const TensorMapDecl& decl, const Shape& shape, DType d) {
  const ArgSpec& a = spec.args.at(size_t(decl.operand));
  return ak_tensor_map_view_of(uint64_t(a.row_length(shape)), uint64_t(a.numel(shape)), elem_size(a.elem, d),
                               mapped_elem_bytes(a, d), tma_type(a, d));
}

std::string unmappable_reason(const TensorMapView& v, CUdeviceptr base) { return ak_tensor_map_unmappable(v, base); }

Result<TensorMapsParam> encode_tensor_maps(const CudaDriver& driver, const std::vector<TensorMapDecl>& decls,
                                           const KernelSpec& spec, const Shape& shape, DType d,
                                           const std::vector<CUdeviceptr>& operands) {
  std::vector<TensorMapView> views;
  std::vector<CUdeviceptr> bases;
  for (const TensorMapDecl& m : decls) {
    views.push_back(tensor_map_view(spec, m, shape, d));
    bases.push_back(operands.at(size_t(m.operand)));
  }
  TensorMapsParam p;
  int failed = 0;
  const CUresult r = ak_encode_tensor_maps(driver.cuTensorMapEncodeTiled, decls.data(), int(decls.size()), views.data(),
                                           bases.data(), p, &failed);
  if (r != CUDA_SUCCESS) {
    const TensorMapDecl& m = decls[size_t(failed)];
    const TensorMapView& v = views[size_t(failed)];
    return error("encoding " + map_name(failed, m, spec) + " for " + shape_str(shape) + " " + dtype_name(d) + " (" +
                 std::to_string(v.rows) + " x " + std::to_string(v.cols) + ", box " + std::to_string(m.box_rows) +
                 " x " + std::to_string(m.box_cols) + "): " + cu_error_text(r));
  }
  return p;
}

}  // namespace ak
