#pragma once
/// What the harness needs to know about one kernel type: its ABI, its shapes, its tolerances, the
/// bytes and flops it must move, a trusted GPU reference and a CPU double-precision reference.
/// One spec per folder under kernels_cuda/; the harness itself knows no kernel type by name.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ak {

enum class DType { F16, BF16, F32 };
const char* dtype_name(DType d);        ///< "fp16", "bf16", "fp32"
const char* dtype_cuda_type(DType d);   ///< "__half", "__nv_bfloat16", "float"
size_t dtype_size(DType d);
std::optional<DType> parse_dtype(const std::string& s);

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  ///< "8192x8192"
/// "8192x8192" or "4,32,4096": non-negative integers (a 0 is a flag or a code some types take,
/// KernelSpec::zero_dims; the spec refuses it anywhere else).
std::optional<Shape> parse_shape(const std::string& s);

/// atol = rtol: an element passes when |got - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double atol, rtol;
};
/// docs/design.md's tolerances: fp16 1e-2, bf16 2e-2, fp32 1e-4.
Tolerance design_tolerance(DType d);
/// The tighter ones it sets for softmax, layernorm and rotary_embedding: 1e-3, 2e-3, 1e-5.
Tolerance tight_tolerance(DType d);

/// The number of rows of a shape: the product of all but its last dimension.
int64_t leading_rows(const Shape& s);

/// How the harness fills an input before a run.
enum class Fill {
  Data,        ///< the tensor the kernel works on: normal values; the adversarial recipes apply here
  Weight,      ///< a per-column scale: uniform in [0.5, 1.5]
  Bias,        ///< a per-column shift: uniform in [-0.5, 0.5]
  ClassIndex,  ///< int64 class indices, uniform in [0, cols)
  /// int64 targets as a model's batch has them: about 1 row in 8 ignored (kIgnoredTarget), the
  /// first and the last row ignored in some runs (drawn from the seed), the others as ClassIndex
  ClassIndexOrIgnored,
  Ignored,     ///< int64 targets, every one kIgnoredTarget: every row ignored
  /// ClassIndexOrIgnored, and five consecutive rows (from a row drawn from the seed, wrapping) given
  /// targets outside [0, cols) that are not kIgnoredTarget: -1, cols, past cols, and values whose
  /// low 32 bits read as 0 or as -100
  ClassIndexOrInvalid,
  FanIn,       ///< a GEMM weight: Data's values times 1/sqrt(shape[dim]), so products stay O(1)
  PlainData,   ///< normal values whatever the run's recipe: an input stage 3 leaves alone
  /// int64 values uniform in [low, high) of ArgSpec::int_range: a user type's int64 input, drawn by
  /// its reference process (get_inputs()), the bounds telling the kernel's author what to expect
  IntRange,
};

/// The target that marks a row ignored: PyTorch's default ignore_index.
inline constexpr int64_t kIgnoredTarget = -100;

/// How the data input of a run is drawn (stage 3 runs each adversarial one).
enum class Recipe {
  Normal,        ///< approximately N(0, 1)
  NearMax,       ///< magnitudes near fp16's largest value (32768 to 65504, multiples of 32), random signs
  Tiny,          ///< subnormal magnitudes of the dtype
  OneHuge,       ///< normal values with one huge value in each row
  ConstantRows,  ///< every element of a row equal (a small integer)
  MixedSigns,    ///< alternating signs, integer magnitudes from 1 to 1000
  Large,         ///< normal values times 16: attention logits past the range of exp()
};
inline const std::vector<Recipe> kAdversarialRecipes = {Recipe::NearMax, Recipe::Tiny, Recipe::OneHuge,
                                                        Recipe::ConstantRows, Recipe::MixedSigns};

/// The element type of a buffer argument: the dtype under test, or a fixed one.
enum class Elem { T, F32, I64, U32, I32 };
size_t elem_size(Elem e, DType d);
const char* elem_cuda_type(Elem e);  ///< "T", "float", "long long", "unsigned int", "int"

/// One argument of the entry point, in order.
struct ArgSpec {
  enum Kind {
    Input,       ///< read-only; checked unchanged after each run
    Output,      ///< poisoned before each run, compared with the reference
    Scratch,     ///< the kernel's own workspace; contents undefined
    Counters,    ///< zeroed before the first launch; the kernel must leave them zero again
    Dim,         ///< an int: shape[dim], or computed(shape) when set
    FloatConst,  ///< a float: value
  } kind;
  std::string name;
  std::function<int64_t(const Shape&)> numel = {};  ///< buffers: element count
  Fill fill = Fill::Data;                            ///< Input
  int dim = 0;                                       ///< Dim: index into the shape; FanIn: the fan-in
  float value = 0;                                   ///< FloatConst: the value passed
  Elem elem = Elem::T;                               ///< buffers: element type
  /// Buffers a tensor map may cover: the elements of one row (the innermost dimension), so the
  /// buffer is seen as a row-major matrix; unset: the buffer cannot be mapped.
  std::function<int64_t(const Shape&)> row_length = {};
  /// Dim: an int the shape implies rather than one of its dimensions (a stride its layout gives);
  /// an exported op computes it from its tensors and passes it after the shape's dimensions.
  std::function<int64_t(const Shape&)> computed = {};
  /// Input: the fill of some shapes when it is not `fill` (a stage shape whose every row is ignored).
  std::function<Fill(const Shape&)> fill_of_shape = {};
  /// Fill::IntRange: the [low, high) its values are drawn in at a shape.
  std::function<std::pair<int64_t, int64_t>(const Shape&)> int_range = {};
  Fill fill_for(const Shape& s) const { return fill_of_shape ? fill_of_shape(s) : fill; }
  bool is_buffer() const { return kind != Dim && kind != FloatConst; }
  int64_t int_value(const Shape& s) const { return computed ? computed(s) : s.at(size_t(dim)); }
};

/// The launch geometry a kernel file exports (ak_block_threads, ak_rows_per_block, ak_tile_m,
/// ak_tile_n, ak_items_per_thread): what a spec's grid function turns into a number of blocks.
struct LaunchGeometry {
  int block_threads = 0;
  int rows_per_block = 1;
  int tile_m = 0;  ///< rows of the output one block computes (tiled types)
  int tile_n = 0;  ///< columns of the output one block computes (tiled types)
  int items_per_thread = 1;  ///< elements of the output one thread computes (user types' "elements" grid)
};

/// What a speedup is measured against when a config gives no baseline_us.
enum class Baseline { ReferenceKernel, Cublas };

/// One GEMM of a cuBLAS baseline: C[m,n] = A[m,k] B[k,n], row-major, fp32 accumulation; with
/// b_transposed, B is given as [n,k] (C = A B^T, a Linear's weight).
struct GemmShape {
  int64_t m, n, k;
  bool b_transposed = false;
};

enum class Metric { GBps, TFLOPS };

/// The CPU reference: inputs (as doubles, in ABI order of the Input args) to outputs, in double;
/// the dtype for the few results defined on values rounded to it (cross_entropy's mean).
using CpuReference = std::function<std::vector<std::vector<double>>(
    const Shape&, DType, const std::vector<std::vector<double>>& inputs)>;

struct KernelSpec {
  std::string type;          ///< e.g. "rmsnorm"
  /// The version of the type's kernel-file contract (its arguments and what they mean). A file
  /// names the version it was written for (ak_contract_version, kernels_cuda/contract_version.hpp);
  /// older versions stay registered, so kept files and run folders of older builds still load.
  int contract_version = 1;
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
  /// Where the tolerance must grow with the shape (a sum's rounding grows with its row), the
  /// tolerance at a shape; empty: tolerance(d) at every shape. What the harness judges with
  /// (tolerance_for); tolerance(d) stays the number a person or an LLM is told.
  std::function<Tolerance(DType, const Shape&)> tolerance_at;
  Tolerance tolerance_for(DType d, const Shape& s) const { return tolerance_at ? tolerance_at(d, s) : tolerance(d); }
  std::function<double(const Shape&, DType)> bytes;   ///< the minimum bytes moved
  std::function<double(const Shape&)> flops;
  /// Blocks to launch, given the shape and the geometry the module exports.
  std::function<int64_t(const Shape&, const LaunchGeometry&)> grid;
  /// The grid in words, for a person or an LLM writing a kernel file: which constants it reads.
  std::string launch_help;
  /// A file may declare its own launch plan (ak_launch, kernels_cuda/launch_plan.hpp) instead of
  /// the one entry point: user types, whose ops need it; the built-in types have their grids.
  bool launch_plans = false;
  /// The adversarial recipes of stage 3 that make sense for this type.
  std::vector<Recipe> stability_recipes = kAdversarialRecipes;
  int64_t rows(const Shape& s) const;   ///< row_count(s), or the product of all but the last dimension
  /// The rows the reference runs a block on, when they are not the leading dimensions' product.
  std::function<int64_t(const Shape&)> row_count;
  /// "" or why a shape of the right dimension count cannot be run (a value the contract excludes).
  std::function<std::string(const Shape&)> shape_error;
  /// Dimensions that may be 0, being a flag or a code rather than a size (matmul's has_bias);
  /// every other dimension is at least 1.
  std::vector<size_t> zero_dims;
  /// "" or which dimension is 0 where the type takes a size.
  std::string zero_dimension_error(const Shape& s) const;
  int64_t cols(const Shape& s) const { return col_count ? col_count(s) : s.back(); }
  /// The elements of one row of the data inputs (what the adversarial recipes fill row by row),
  /// when it is not the shape's last dimension.
  std::function<int64_t(const Shape&)> col_count;

  std::string reference_source;         ///< CUDA: template reference_entry<T, O>, O = float or T
  int reference_threads = 256;          ///< one block of these per row
  CpuReference cpu_reference;

  /// Sampled validation, for outputs too large to recompute whole on every run: when set, the
  /// output is seen as rows of output_row_length elements, the reference takes one more argument
  /// `const int* rows` and computes only those rows (compacted; nullptr: all of them), and the
  /// harness compares only those rows, drawn afresh each run (the first and last always among them).
  int validation_rows = 0;                              ///< 0: the whole output, every run
  std::function<int64_t(const Shape&)> output_row_length;
  /// Blocks of the reference per output row; null: one.
  std::function<int64_t(const Shape&)> reference_blocks_per_row;

  Baseline baseline = Baseline::ReferenceKernel;
  std::function<std::vector<GemmShape>(const Shape&)> cublas_gemms;  ///< Baseline::Cublas
  bool is_memory_bound() const { return metric == Metric::GBps; }
  std::string abi() const;              ///< the signature a kernel file must define
  std::string shape_help() const;       ///< "rows, cols"
  const std::string& starter_source() const;
};

/// Under sampled validation: the rows of the output (its element count / output_row_length).
int64_t output_rows(const KernelSpec& spec, const Shape& shape);

}  // namespace ak
