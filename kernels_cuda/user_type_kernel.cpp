// user_kernel_spec(): the KernelSpec of a user type (docs/user-types.md, "The kernel file").
#include <memory>

#include "kernels_cuda/grid_rules.h"
#include "kernels_cuda/spec_expression.hpp"
#include "kernels_cuda/user_type.hpp"

namespace ak {
namespace {

using SpecPtr = std::shared_ptr<const UserTypeSpec>;

const UserTensor& first_of(const UserTypeSpec& s, bool output) {
  for (const UserTensor& t : s.tensors)
    if ((t.role == TensorRole::Output) == output) return t;
  return s.tensors.front();
}

std::map<std::string, double> dim_values(const UserTypeSpec& s, const Shape& shape) {
  std::map<std::string, double> v;
  for (size_t i = 0; i < s.dims.size() && i < shape.size(); ++i) v[s.dims[i]] = double(shape[i]);
  return v;
}

/// An expression checked at parse time: it cannot fail but by a division by zero at some shape,
/// which counts as no bytes or no flops rather than a number made up.
double evaluate(const SpecExpression& e, std::map<std::string, double> values) {
  auto v = e.evaluate(values);
  return v ? *v : 0;
}

std::string grid_help(const UserTypeSpec& s);

/// The launch plan in brief, the alternative to the grid rule (docs/user-types.md, "Launch plans").
std::string plan_help(const UserTypeSpec& s) {
  std::string dims;
  for (auto& d : s.dims) dims += (dims.empty() ? "" : ", ") + d;
  return "\nOr, for an op that is several kernels, no " + s.name + "_kernel and a launch plan instead:\n"
         "extern \"C\" __constant__ char ak_launch[] = \"let n = ...;\" \"scratch buf float[n];\" "
         "\"step first grid(ceil_div(n, 256)) block(256);\" \"step second grid(X, Y) block(32, 8) smem(BYTES);\";\n"
         "  // statements end with ';': let NAME = EXPR; scratch NAME float|T|int|int64[EXPR]; step NAME grid(X[, Y[, Z]]) "
         "block(X[, Y[, Z]]) [smem(BYTES)]; (1-16 steps, run in order on one stream; up to 16 scratch buffers, 32 lets)\n"
         "  // EXPR: integers, + - * / % (floor), ceil_div(a, b), min(a, b), max(a, b), the dims (" + dims +
         "), integer [fixed] globals, earlier lets\n"
         "  // each step is template <typename T> __global__ void NAME(the tensors as above, then the scratch buffers in "
         "order as float* / T* / int* / long long*, then the dims as int): every step the same parameters\n"
         "  // scratch holds 0xFF bytes when a launch starts (write before you read, in this launch); the time runs from "
         "the first step's start to the last step's end; checked at every declared shape at load";
}

std::string launch_help(const UserTypeSpec& s) {
  return grid_help(s) + plan_help(s);
}

std::string grid_help(const UserTypeSpec& s) {
  const UserTensor& out = first_of(s, true);
  const UserTensor& in = first_of(s, false);
  switch (s.grid) {
    case GridRule::Rows:
      return "extern \"C\" __constant__ int ak_rows_per_block = ...;  // grid = ceil(rows / ak_rows_per_block), rows = the elements of " +
             in.name + " / its last dimension (default 1)";
    case GridRule::Tiles:
      return "extern \"C\" __constant__ int ak_tile_m = ..., ak_tile_n = ...;  // " + out.name +
             " seen as [M, N] (N its last dimension): grid = ceil(M / ak_tile_m) * ceil(N / ak_tile_n), tiles row-major";
    default:
      return "extern \"C\" __constant__ int ak_items_per_thread = ...;  // grid = ceil(elements of " + out.name +
             " / (ak_block_threads * ak_items_per_thread)) (default 1)";
  }
}

}  // namespace

KernelSpec user_kernel_spec(const UserTypeSpec& user) {
  const SpecPtr s = std::make_shared<const UserTypeSpec>(user);
  KernelSpec k;
  k.type = s->name;
  k.contract_version = 1;
  k.summary = s->summary;
  k.entry = s->name + "_kernel";
  k.shape_names = s->dims;
  for (const UserTensor& t : s->tensors) {
    ArgSpec a{t.role == TensorRole::Output ? ArgSpec::Output : ArgSpec::Input, t.name};
    a.numel = [s, &t = t](const Shape& shape) { return s->numel(t, shape); };
    a.elem = t.int64 ? Elem::I64 : Elem::T;
    // Stage 3's adversarial values belong to the data the module is applied to, not to its weights.
    a.fill = t.int64 ? Fill::IntRange : t.role == TensorRole::Input ? Fill::Data : Fill::PlainData;
    if (t.low && t.high)
      a.int_range = [s, &t = t](const Shape& shape) { return std::pair{s->value_of(*t.low, shape), s->value_of(*t.high, shape)}; };
    if (!t.shape.empty()) a.row_length = [s, &t = t](const Shape& shape) { return s->value_of(t.shape.back(), shape); };
    k.args.push_back(std::move(a));
  }
  for (size_t i = 0; i < s->dims.size(); ++i) {
    ArgSpec a{ArgSpec::Dim, s->dims[i]};
    a.dim = int(i);
    k.args.push_back(std::move(a));
  }
  k.dtypes = s->dtypes;
  k.metric = s->metric;
  k.bench_shape = s->bench;
  k.smoke_shape = s->smoke;
  k.sweep_shapes = s->sweep;
  k.stability_shape = s->stability;
  k.determinism_shape = s->determinism;
  k.edge_shapes = s->edge;
  k.tolerance = [s](DType d) { return s->tolerance_for(d); };
  if (s->bytes == "tensors") {
    k.bytes = [s](const Shape& shape, DType d) {
      double total = 0;
      for (const UserTensor& t : s->tensors) total += double(s->numel(t, shape)) * (t.int64 ? 8 : dtype_size(d));
      return total;
    };
  } else {
    auto e = std::make_shared<SpecExpression>(*SpecExpression::parse(s->bytes));
    k.bytes = [s, e](const Shape& shape, DType d) {
      auto values = dim_values(*s, shape);
      values["elem"] = double(dtype_size(d));
      return evaluate(*e, values);
    };
  }
  auto flops = std::make_shared<SpecExpression>(*SpecExpression::parse(s->flops));
  k.flops = [s, flops](const Shape& shape) { return evaluate(*flops, dim_values(*s, shape)); };
  // The rows and columns a harness reads off a shape (stage 3's recipes work row by row): those
  // of the first input, as the rows grid counts them.
  const UserTensor* first_input = &first_of(*s, false);
  if (first_input->role == TensorRole::Output || first_input->shape.empty()) first_input = &first_of(*s, true);
  k.col_count = [s, first_input](const Shape& shape) {
    return first_input->shape.empty() ? int64_t(1) : s->value_of(first_input->shape.back(), shape);
  };
  k.row_count = [s, first_input](const Shape& shape) {
    const int64_t cols = first_input->shape.empty() ? 1 : s->value_of(first_input->shape.back(), shape);
    return cols > 0 ? s->numel(*first_input, shape) / cols : 0;
  };
  const UserTensor* out = &first_of(*s, true);
  switch (s->grid) {
    case GridRule::Elements:
      k.grid = [s, out](const Shape& shape, const LaunchGeometry& g) {
        return int64_t(ak_elementwise_blocks(s->numel(*out, shape), g.block_threads, g.items_per_thread));
      };
      break;
    case GridRule::Rows:
      k.grid = [s, first_input](const Shape& shape, const LaunchGeometry& g) {
        const Shape sizes = s->sizes(*first_input, shape);
        const std::vector<long long> dims(sizes.begin(), sizes.end());
        return int64_t(ak_rowwise_blocks(dims.data(), int(dims.size()), g.rows_per_block));
      };
      break;
    case GridRule::Tiles:
      k.grid = [s, out](const Shape& shape, const LaunchGeometry& g) {
        const int64_t n = s->value_of(out->shape.back(), shape);
        return int64_t(ak_tiled_blocks(s->numel(*out, shape) / n, n, g.tile_m, g.tile_n, 1));
      };
      break;
  }
  k.launch_help = launch_help(*s);
  k.launch_plans = true;
  k.shape_error = [s](const Shape& shape) -> std::string {
    if (shape.size() != s->dims.size()) return "";
    if (std::string why = s->shape_problem(shape); !why.empty()) return why;
    for (const UserTensor& t : s->tensors)
      if (t.low && t.high && s->value_of(*t.low, shape) >= s->value_of(*t.high, shape))
        return t.name + "'s values are drawn in [" + t.low->text() + ", " + t.high->text() + "), which is empty at this shape";
    return "";
  };
  return k;
}

}  // namespace ak
