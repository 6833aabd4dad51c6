// A user type's spec as a value: its names, and its tensors' sizes at a shape of its dims.
#include "kernels_cuda/user_type.hpp"

#include <algorithm>
#include <sstream>

#include "kernels_cuda/launch_plan.hpp"
#include "kernels_cuda/spec_expression.hpp"

namespace ak {

const char* grid_rule_name(GridRule g) {
  return g == GridRule::Rows ? "rows" : g == GridRule::Tiles ? "tiles" : "elements";
}

const char* tensor_role_name(TensorRole r) {
  switch (r) {
    case TensorRole::Input: return "input";
    case TensorRole::Parameter: return "parameter";
    case TensorRole::Buffer: return "buffer";
    default: return "output";
  }
}

const std::vector<std::string>& user_type_kinds() {
  static const std::vector<std::string> kinds{"elementwise", "rowwise",   "reduction", "gemm_epilogue",
                                              "convolution", "transposed_convolution", "pooling", "normalization",
                                              "scan",        "index",     "loss",      "matmul", "model"};
  return kinds;
}

Tolerance UserTypeSpec::tolerance_for(DType d) const {
  auto it = tolerance.find(d);
  return it == tolerance.end() ? design_tolerance(d) : Tolerance{it->second, it->second};
}

std::string SizeTerm::text() const {
  return expr ? expr->text() : dim.empty() ? std::to_string(value) : dim;
}

int64_t UserTypeSpec::value_of(const SizeTerm& term, const Shape& shape) const {
  if (term.expr) return term.expr->evaluate_int(plan_values(*this, shape)).value_or(0);
  if (term.dim.empty()) return term.value;
  const auto it = std::find(dims.begin(), dims.end(), term.dim);
  return shape.at(size_t(it - dims.begin()));
}

Shape UserTypeSpec::sizes(const UserTensor& t, const Shape& shape) const {
  Shape s;
  for (const SizeTerm& term : t.shape) s.push_back(value_of(term, shape));
  return s;
}

int64_t UserTypeSpec::numel(const UserTensor& t, const Shape& shape) const {
  int64_t n = 1;
  for (int64_t v : sizes(t, shape)) n *= v;
  return n;
}

std::string UserTypeSpec::shape_problem(const Shape& shape) const {
  if (shape.size() != dims.size()) return "";
  const auto values = plan_values(*this, shape);
  for (const UserTensor& t : tensors) {
    double n = 1;
    for (const SizeTerm& term : t.shape) {
      if (term.expr) {
        auto v = term.expr->evaluate_int(values);
        if (!v) return t.name + "'s size " + v.error().message;
        if (*v < 1) return t.name + "'s size \"" + term.text() + "\" is " + std::to_string(*v) + ": expected a positive size";
      }
      n *= double(value_of(term, shape));
    }
    if (n > double(int64_t(1) << 48)) {
      std::ostringstream o;
      o << n;
      return t.name + " has " + o.str() + " elements: expected at most 2^48";
    }
  }
  return "";
}

}  // namespace ak
