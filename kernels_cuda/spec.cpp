#include "kernels_cuda/spec.hpp"

#include <algorithm>

#include <sstream>

#include "kernels_cuda/contract_version.hpp"
#include "kernels_cuda/registry.hpp"

namespace ak {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::F16: return "fp16";
    case DType::BF16: return "bf16";
    default: return "fp32";
  }
}

const char* dtype_cuda_type(DType d) {
  switch (d) {
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    default: return "float";
  }
}

size_t dtype_size(DType d) { return d == DType::F32 ? 4 : 2; }

size_t elem_size(Elem e, DType d) {
  return e == Elem::I64 ? 8 : e == Elem::U32 || e == Elem::F32 || e == Elem::I32 ? 4 : dtype_size(d);
}

const char* elem_cuda_type(Elem e) {
  return e == Elem::I64 ? "long long" : e == Elem::U32 ? "unsigned int" : e == Elem::I32 ? "int" : e == Elem::F32 ? "float" : "T";
}

std::optional<DType> parse_dtype(const std::string& s) {
  if (s == "fp16" || s == "float16" || s == "half") return DType::F16;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "fp32" || s == "float32" || s == "float") return DType::F32;
  return std::nullopt;
}

std::string shape_str(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out;
}

std::optional<Shape> parse_shape(const std::string& text) {
  Shape s;
  const char sep = text.find(',') != std::string::npos ? ',' : 'x';
  if (text.empty() || text.back() == sep) return std::nullopt;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, sep)) {
    try {
      size_t used = 0;
      long long v = std::stoll(part, &used);
      if (used != part.size() || v < 0) return std::nullopt;
      s.push_back(v);
    } catch (...) {
      return std::nullopt;
    }
  }
  if (s.empty()) return std::nullopt;
  return s;
}

Tolerance design_tolerance(DType d) {
  return d == DType::F16 ? Tolerance{1e-2, 1e-2} : d == DType::BF16 ? Tolerance{2e-2, 2e-2} : Tolerance{1e-4, 1e-4};
}

Tolerance tight_tolerance(DType d) {
  return d == DType::F16 ? Tolerance{1e-3, 1e-3} : d == DType::BF16 ? Tolerance{2e-3, 2e-3} : Tolerance{1e-5, 1e-5};
}

int64_t leading_rows(const Shape& s) {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < s.size(); ++i) r *= s[i];
  return r;
}

int64_t KernelSpec::rows(const Shape& s) const { return row_count ? row_count(s) : leading_rows(s); }

int64_t output_rows(const KernelSpec& spec, const Shape& shape) {
  for (const ArgSpec& a : spec.args)
    if (a.kind == ArgSpec::Output) return a.numel(shape) / spec.output_row_length(shape);
  return 0;
}

std::string KernelSpec::abi() const {
  std::string sig = "template <typename T> __global__ void " + entry + "(";
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgSpec& a = args[i];
    sig += i ? ", " : "";
    const std::string elem = elem_cuda_type(a.elem);
    switch (a.kind) {
      case ArgSpec::Input: sig += "const " + elem + "* __restrict__ " + a.name; break;
      case ArgSpec::Output:
      case ArgSpec::Scratch: sig += elem + "* __restrict__ " + a.name; break;
      case ArgSpec::Counters: sig += elem + "* " + a.name; break;  // shared between blocks: not restrict
      case ArgSpec::Dim: sig += "int " + a.name; break;
      case ArgSpec::FloatConst: sig += "float " + a.name; break;
    }
  }
  return sig + ")";
}

std::string KernelSpec::shape_help() const {
  std::string s;
  for (auto& n : shape_names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string KernelSpec::zero_dimension_error(const Shape& s) const {
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == 0 && std::find(zero_dims.begin(), zero_dims.end(), i) == zero_dims.end())
      return (i < shape_names.size() ? shape_names[i] : "dimension " + std::to_string(i)) + " is 0: give it at least 1";
  return "";
}

const std::string& KernelSpec::starter_source() const {
  static const std::string none;
  const std::string* s = embedded_starter(type);
  // An older contract's spec has no starter: the embedded one is written for the newest.
  return s && declared_contract_version(*s).value_or(0) == contract_version ? *s : none;
}

}  // namespace ak
