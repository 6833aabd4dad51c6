#include "harness/tensor_maps.hpp"

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
  const size_t row_bytes = size_t(m.box_cols) * mapped_elem_bytes(a, d);
  if (row_bytes % 16)
    return "a box row is " + std::to_string(row_bytes) + " bytes in " + dtype_name(d) + ": it must be a multiple of 16";
  if (m.swizzle && row_bytes > size_t(m.swizzle))
    return "a box row is " + std::to_string(row_bytes) + " bytes in " + dtype_name(d) + ", wider than the " +
           std::to_string(m.swizzle) + "-byte swizzle span";
  return "";
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
  if (m.box_cols < 1 || m.box_cols > 256 || m.box_rows < 1 || m.box_rows > 256)
    return "the box is " + std::to_string(m.box_cols) + " x " + std::to_string(m.box_rows) + ": each side must be 1 to 256";
  if (m.swizzle != 0 && m.swizzle != 32 && m.swizzle != 64 && m.swizzle != 128)
    return "swizzle " + std::to_string(m.swizzle) + ": expected 0, 32, 64 or 128 bytes";
  if (m.l2_promotion != 0 && m.l2_promotion != 64 && m.l2_promotion != 128 && m.l2_promotion != 256)
    return "L2 promotion " + std::to_string(m.l2_promotion) + ": expected 0, 64, 128 or 256 bytes";
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
  if (mapped_as_t(a)) return d == DType::F16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                             : d == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  return a.elem == Elem::U32 ? CU_TENSOR_MAP_DATA_TYPE_UINT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}

CUtensorMapSwizzle tma_swizzle(int bytes) {
  switch (bytes) {
    case 32: return CU_TENSOR_MAP_SWIZZLE_32B;
    case 64: return CU_TENSOR_MAP_SWIZZLE_64B;
    case 128: return CU_TENSOR_MAP_SWIZZLE_128B;
    default: return CU_TENSOR_MAP_SWIZZLE_NONE;
  }
}

CUtensorMapL2promotion tma_l2(int bytes) {
  switch (bytes) {
    case 64: return CU_TENSOR_MAP_L2_PROMOTION_L2_64B;
    case 128: return CU_TENSOR_MAP_L2_PROMOTION_L2_128B;
    case 256: return CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
    default: return CU_TENSOR_MAP_L2_PROMOTION_NONE;
  }
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
  TensorMapView v;
  v.elem_bytes = mapped_elem_bytes(a, d);
  v.type = tma_type(a, d);
  v.cols = uint64_t(a.row_length(shape));
  const uint64_t bytes = uint64_t(a.numel(shape)) * elem_size(a.elem, d);
  v.rows = v.cols ? bytes / (v.cols * v.elem_bytes) : 0;
  return v;
}

std::string unmappable_reason(const TensorMapView& v, CUdeviceptr base) {
  if (v.cols == 0 || v.rows == 0) return "the operand is empty";
  if (base % 16) return "its base address is not 16-byte aligned";
  if ((v.cols * v.elem_bytes) % 16)
    return "its row stride (" + std::to_string(v.cols * v.elem_bytes) + " bytes) is not a multiple of 16 bytes";
  if (v.cols >= (uint64_t(1) << 32) || v.rows >= (uint64_t(1) << 32)) return "a dimension reaches 2^32";
  if (v.cols * v.elem_bytes >= (uint64_t(1) << 40)) return "its row stride reaches 2^40 bytes";
  return "";
}

Result<TensorMapsParam> encode_tensor_maps(const CudaDriver& driver, const std::vector<TensorMapDecl>& decls,
                                           const KernelSpec& spec, const Shape& shape, DType d,
                                           const std::vector<CUdeviceptr>& operands) {
  TensorMapsParam p;
  std::memset(&p, 0, sizeof p);
  for (size_t i = 0; i < decls.size(); ++i) {
    const TensorMapDecl& m = decls[i];
    const TensorMapView v = tensor_map_view(spec, m, shape, d);
    const CUdeviceptr base = operands.at(size_t(m.operand));
    if (!box_problem(m, spec.args.at(size_t(m.operand)), d).empty()) continue;   // not in this dtype: bit i clear
    if (!unmappable_reason(v, base).empty()) continue;
    const cuuint64_t dims[2] = {v.cols, v.rows};
    const cuuint64_t strides[1] = {v.cols * v.elem_bytes};
    const cuuint32_t box[2] = {cuuint32_t(m.box_cols), cuuint32_t(m.box_rows)};
    const cuuint32_t unit[2] = {1, 1};
    CUtensorMap encoded;
    CUresult r = driver.cuTensorMapEncodeTiled(&encoded, v.type, 2, reinterpret_cast<void*>(base), dims, strides, box,
                                               unit, CU_TENSOR_MAP_INTERLEAVE_NONE, tma_swizzle(m.swizzle),
                                               tma_l2(m.l2_promotion), CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
      return error("encoding " + map_name(int(i), m, spec) + " for " + shape_str(shape) + " " + dtype_name(d) + " (" +
                   std::to_string(v.rows) + " x " + std::to_string(v.cols) + ", box " + std::to_string(m.box_rows) +
                   " x " + std::to_string(m.box_cols) + "): " + cu_error_text(r));
    static_assert(sizeof(encoded) == sizeof(p.map[i]));
    std::memcpy(&p.map[i], &encoded, sizeof encoded);
    p.built |= 1u << i;
  }
  return p;
}

}  // namespace ak
