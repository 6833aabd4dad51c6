#pragma once
/// A user type: a kernel type defined by a TOML spec beside a PyTorch reference in KernelBench's
/// convention (docs/user-types.md). The spec names the module's tensors, their shapes in the
/// module's size globals, the shapes of each stage and the launch rule; user_kernel_spec() turns
/// it into the KernelSpec the loop and the harness use for every type.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.hpp"
#include "kernels_cuda/spec.hpp"

namespace ak {

/// How many blocks a user type's kernel is launched with (docs/user-types.md, "Grid rules").
enum class GridRule { Elements, Rows, Tiles };
const char* grid_rule_name(GridRule g);   ///< "elements", "rows", "tiles"

enum class TensorRole { Input, Parameter, Buffer, Output };
const char* tensor_role_name(TensorRole r);

class SpecExpression;

/// One entry of a tensor's shape, or a bound of an int64 input: a dim's name, an integer, or an
/// integer expression over the dims and the integer [fixed] globals ("(height - 3) / 2 + 1").
struct SizeTerm {
  std::string dim;    ///< empty: `value` is a literal, or `expr` is set
  int64_t value = 0;
  std::shared_ptr<const SpecExpression> expr;   ///< an expression other than a plain name
  std::string text() const;
};

/// One argument tensor of the kernel, in the kernel's argument order.
struct UserTensor {
  std::string name;
  TensorRole role = TensorRole::Input;
  std::vector<SizeTerm> shape;
  bool int64 = false;                ///< type = "int64" (else "float": the dtype under test)
  std::optional<SizeTerm> low, high; ///< int64 inputs: values drawn in [low, high)
  /// Float inputs, optional: the range [least, most] their values lie in, so that the edge-case
  /// stage's inputs stay in it (a log's input above 0, a probability in [0, 1]).
  std::optional<double> least, most;
};

struct UserTypeSpec {
  std::string path;              ///< the spec file, as given (messages, relative paths)
  std::string text;              ///< the spec's TOML text, as read
  std::string reference;         ///< the reference's path as the spec writes it (relative to it)
  std::string reference_source;  ///< the reference's Python text
  std::string starter;           ///< the starter's path as written; empty: the LLM writes the first file
  std::string starter_source;

  std::string name, summary;
  std::string kind;              ///< one of user_type_kinds()
  GridRule grid = GridRule::Elements;
  std::vector<DType> dtypes;
  Metric metric = Metric::GBps;
  std::string bytes = "tensors"; ///< "tensors", or an expression in the dims and `elem`
  std::string flops = "0";       ///< an expression in the dims

  std::vector<std::string> dims;
  Shape bench, smoke, stability, determinism;
  std::vector<Shape> sweep, edge;
  /// [fixed]: globals that are not sizes, each with its TOML value as written (e.g. "1").
  std::vector<std::pair<std::string, std::string>> fixed;
  std::map<DType, double> tolerance;   ///< atol = rtol; a dtype missing: design_tolerance
  std::vector<UserTensor> tensors;

  Tolerance tolerance_for(DType d) const;
  /// A tensor's element count at a shape of the dims.
  int64_t numel(const UserTensor& t, const Shape& shape) const;
  /// A tensor's sizes at a shape of the dims.
  Shape sizes(const UserTensor& t, const Shape& shape) const;
  /// A term's value at a shape; an expression that cannot be evaluated there (a shape no stage
  /// declares, where it divides by 0) is 0: shape_problem says why.
  int64_t value_of(const SizeTerm& term, const Shape& shape) const;
  /// "" when every tensor's every size is a positive integer at `shape`; else which is not, and why.
  std::string shape_problem(const Shape& shape) const;

  /// What travels in an evaluation request: the spec's path and text, the reference's source and
  /// the starter's; from_json parses the text again and reads no file.
  nlohmann::json to_json() const;
  static Result<UserTypeSpec> from_json(const nlohmann::json& j);
};

/// The kinds a spec may name, each with its notes for the LLM (prompts/notes/kind-<kind>.txt).
const std::vector<std::string>& user_type_kinds();

/// Parses and checks a spec's text. `path` is used in messages; the bench shape stays empty when
/// the spec gives none (with_sources() takes it from the reference's globals). Every problem
/// found is reported, one per line, each naming file:line, the key and what was expected.
Result<UserTypeSpec> parse_user_type(const std::string& text, const std::string& path);

/// Adds the reference's and the starter's text (already read) and completes what depends on them:
/// a missing bench shape is the module's own size globals (`batch_size = 4096` at module level).
Status with_sources(UserTypeSpec& spec, std::string reference_source, std::string starter_source);

/// Reads the spec at `path`, its reference (and its starter when it names one), relative to it.
Result<UserTypeSpec> load_user_type(const std::string& path);

/// The KernelSpec of a user type (docs/user-types.md): arguments in the contract's order, the
/// stage shapes, tolerances, bytes, flops and grid. It has no GPU nor CPU reference: a user
/// type's reference is its PyTorch module, run by the reference process.
KernelSpec user_kernel_spec(const UserTypeSpec& spec);

}  // namespace ak
