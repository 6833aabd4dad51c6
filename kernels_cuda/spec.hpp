#pragma once
/// What the harness needs to know about one kernel type: its ABI, its shapes, its tolerances, the
/// bytes and flops it must move, a trusted GPU reference and a CPU double-precision reference.
/// One spec per folder under kernels_cuda/; the harness itself knows no kernel type by name.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ak {

enum class DType { F16, BF16, F32 };
const char* dtype_name(DType d);        ///< "fp16", "bf16", "fp32"
const char* dtype_cuda_type(DType d);   ///< "__half", "__nv_bfloat16", "float"
size_t dtype_size(DType d);
std::optional<DType> parse_dtype(const std::string& s);

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  ///< "8192x8192"
std::optional<Shape> parse_shape(const std::string& s);

/// atol = rtol: an element passes when |got - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double atol, rtol;
};
/// DESIGN.md's tolerances: fp16 1e-2, bf16 2e-2, fp32 1e-4.
Tolerance design_tolerance(DType d);
/// The tighter ones it sets for softmax, layernorm and rotary_embedding: 1e-3, 2e-3, 1e-5.
Tolerance tight_tolerance(DType d);

/// The number of rows of a shape: the product of all but its last dimension.
int64_t leading_rows(const Shape& s);

/// How the harness fills an input before a run.
enum class Fill {
  Data,    ///< the tensor the kernel works on: normal values; the adversarial recipes apply here
  Weight,  ///< a per-column scale: uniform in [0.5, 1.5]
  Bias,    ///< a per-column shift: uniform in [-0.5, 0.5]
};

/// One argument of the entry point, in order.
struct ArgSpec {
  enum Kind { Input, Output, Dim, FloatConst } kind;
  std::string name;
  std::function<int64_t(const Shape&)> numel = {};  ///< Input / Output: element count
  Fill fill = Fill::Data;                            ///< Input
  int dim = 0;                                       ///< Dim: index into the shape, passed as int
  float value = 0;                                   ///< FloatConst: the value passed
};

enum class Metric { GBps, TFLOPS };

/// The CPU reference: inputs (as doubles, in ABI order of the Input args) to outputs.
using CpuReference = std::function<std::vector<std::vector<double>>(
    const Shape&, const std::vector<std::vector<double>>& inputs)>;

struct KernelSpec {
  std::string type;          ///< e.g. "rmsnorm"
  std::string summary;       ///< one line: what it computes
  std::string entry;         ///< the template the file must define, e.g. "rmsnorm_kernel"
  std::string reference_entry;
  std::vector<std::string> shape_names;  ///< e.g. {"rows", "cols"}
  std::vector<ArgSpec> args;
  std::vector<DType> dtypes;
  Metric metric = Metric::GBps;

  Shape bench_shape;
  Shape smoke_shape;
  std::vector<Shape> sweep_shapes;      ///< stage 2, each run in every dtype
  Shape stability_shape;                ///< stage 3
  Shape determinism_shape;              ///< stage 4
  std::vector<Shape> edge_shapes;       ///< stage 5

  std::function<Tolerance(DType)> tolerance;
  std::function<double(const Shape&, DType)> bytes;   ///< the minimum bytes moved
  std::function<double(const Shape&)> flops;
  /// Blocks to launch, given the shape and the knob the module exports as ak_rows_per_block.
  std::function<int64_t(const Shape&, int rows_per_block)> grid;
  int64_t rows(const Shape& s) const;   ///< product of all but the last dimension
  int64_t cols(const Shape& s) const { return s.back(); }

  std::string reference_source;         ///< CUDA: template reference_entry<T, O>, O = float or T
  int reference_threads = 256;          ///< one block of these per row
  CpuReference cpu_reference;

  std::string abi() const;              ///< the signature a kernel file must define
  std::string shape_help() const;       ///< "rows, cols"
  const std::string& starter_source() const;
};

}  // namespace ak
