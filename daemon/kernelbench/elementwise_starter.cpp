#include "daemon/kernelbench/elementwise_starter.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>

#include "daemon/kernelbench/problem_spec.hpp"

namespace ak {
namespace {

using json = nlohmann::json;

/// A number as the float PyTorch's fp32 kernels use for it (the double rounded once to float),
/// written so that NVRTC reads back that very float: 9 significant digits (infinities by their bits).
std::string float_literal(double number) {
  const float v = static_cast<float>(number);
  if (std::isnan(v)) return "__int_as_float(0x7fffffff)";
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", double(v));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return "(" + s + "f)";
}

/// The device helpers the steps call: each as PyTorch's fp32 kernel computes the op (NaN passes
/// through the max/min-based ones as it does in PyTorch).
constexpr const char* kHelpers = R"(__device__ __forceinline__ float ak_to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float ak_to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ak_to_float(float v) { return v; }
template <typename T> __device__ __forceinline__ T ak_from_float(float v);
template <> __device__ __forceinline__ __half ak_from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 ak_from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ float ak_from_float<float>(float v) { return v; }

__device__ __forceinline__ float ak_max(float a, float b) { return (a != a || a > b) ? a : (b != b ? b : (a < b ? b : a)); }
__device__ __forceinline__ float ak_min(float a, float b) { return (a != a || a < b) ? a : (b != b ? b : (a > b ? b : a)); }
__device__ __forceinline__ float ak_relu(float x) { return x > 0.f ? x : (x != x ? x : 0.f); }
__device__ __forceinline__ float ak_sigmoid(float x) { return 1.f / (1.f + expf(-x)); }
__device__ __forceinline__ float ak_silu(float x) { return x / (1.f + expf(-x)); }
__device__ __forceinline__ float ak_softplus(float x, float beta, float threshold) {
  return x * beta > threshold ? x : log1pf(expf(x * beta)) / beta;
}
__device__ __forceinline__ float ak_mish(float x) { return x * tanhf(ak_softplus(x, 1.f, 20.f)); }
__device__ __forceinline__ float ak_hardsigmoid(float x) { return ak_min(ak_max(x + 3.f, 0.f), 6.f) / 6.f; }
__device__ __forceinline__ float ak_hardswish(float x) { return x * ak_min(ak_max(x + 3.f, 0.f), 6.f) / 6.f; }
__device__ __forceinline__ float ak_gelu_erf(float x) { return x * 0.5f * (1.f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float ak_gelu_tanh(float x) {
  const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.f + tanhf(inner));
}
__device__ __forceinline__ float ak_leaky_relu(float x, float slope) { return x > 0.f ? x : x * slope; }
__device__ __forceinline__ float ak_elu(float x, float alpha, float scale, float input_scale) {
  return x <= 0.f ? expm1f(x * input_scale) * (alpha * scale) : x * scale;
}
__device__ __forceinline__ float ak_pow(float x, float e) {
  // PyTorch's pow takes these exponents apart; powf's rounding differs from theirs by an ulp or two.
  if (e == 2.f) return x * x;
  if (e == 3.f) return x * x * x;
  if (e == 0.5f) return sqrtf(x);
  if (e == -1.f) return 1.f / x;
  return powf(x, e);
}
)";

/// Index of a step's first own number: its operands come before.
int operand_count(const std::string& op) {
  static const std::map<std::string, int> binary{{"add", 2}, {"sub", 2}, {"mul", 2}, {"div", 2},
                                                 {"maximum", 2}, {"minimum", 2}, {"pow", 2}};
  auto it = binary.find(op);
  return it == binary.end() ? 1 : it->second;
}

/// The step's own numbers (after its operands); a missing bound ("none") is NaN.
std::vector<double> numbers_of(const json& step) {
  std::vector<double> out;
  const json& args = step["args"];
  for (size_t i = size_t(operand_count(step["op"])); i < args.size(); ++i)
    out.push_back(args[i].contains("n") && args[i]["n"].is_number() ? args[i]["n"].get<double>() : std::nan(""));
  return out;
}

/// The output's element count as a C expression of the dims: each entry a dim, an integer or a
/// [fixed] integer (its value); an Error for any other expression.
Result<std::string> element_count(const json& a) {
  const auto dims = a.value("dims", std::vector<std::string>{});
  const json fixed = a.value("fixed", json::object());
  const json& out = a["outputs"][0]["shape"];
  std::string n = "1LL";
  for (auto& e : out) {
    if (e.is_number_integer()) {
      n += " * " + std::to_string(e.get<long long>()) + "LL";
      continue;
    }
    const std::string s = e.is_string() ? e.get<std::string>() : "";
    if (std::find(dims.begin(), dims.end(), s) != dims.end()) n += " * (long long)" + s;
    else if (fixed.contains(s) && fixed[s].is_number_integer()) n += " * " + std::to_string(fixed[s].get<long long>()) + "LL";
    else return error("the output's size " + e.dump() + " is not a dim nor an integer: no elementwise starter");
  }
  return n;
}

/// Whether `v` names one of the values computed so far (0 .. count - 1).
bool value_index(const json& v, size_t count) {
  return v.is_number_integer() && v.get<long long>() >= 0 && size_t(v.get<long long>()) < count;
}

}  // namespace

Result<std::string> elementwise_step_expression(const json& step, const std::vector<std::string>& o) {
  const std::string op = step.value("op", std::string());
  const std::vector<double> n = numbers_of(step);
  auto need = [&](size_t operands, size_t numbers) -> Status {
    if (o.size() != operands || n.size() != numbers)
      return error("step " + op + " has " + std::to_string(o.size()) + " operands and " + std::to_string(n.size()) +
                   " numbers, expected " + std::to_string(operands) + " and " + std::to_string(numbers));
    return ok();
  };
  static const std::map<std::string, std::string> unary{
      {"neg", "(-{0})"}, {"abs", "fabsf({0})"}, {"exp", "expf({0})"}, {"log", "logf({0})"}, {"log1p", "log1pf({0})"},
      {"expm1", "expm1f({0})"}, {"sqrt", "sqrtf({0})"}, {"rsqrt", "rsqrtf({0})"}, {"sigmoid", "ak_sigmoid({0})"},
      {"tanh", "tanhf({0})"}, {"relu", "ak_relu({0})"}, {"erf", "erff({0})"}, {"sin", "sinf({0})"},
      {"cos", "cosf({0})"}, {"reciprocal", "(1.f / {0})"}, {"silu", "ak_silu({0})"}, {"mish", "ak_mish({0})"},
      {"hardsigmoid", "ak_hardsigmoid({0})"}, {"hardswish", "ak_hardswish({0})"}, {"gelu_erf", "ak_gelu_erf({0})"},
      {"gelu_tanh", "ak_gelu_tanh({0})"}};
  static const std::map<std::string, std::string> binary{
      {"add", "({0} + {1})"}, {"sub", "({0} - {1})"}, {"mul", "({0} * {1})"}, {"div", "({0} / {1})"},
      {"maximum", "ak_max({0}, {1})"}, {"minimum", "ak_min({0}, {1})"}, {"pow", "ak_pow({0}, {1})"}};
  auto fill = [&](std::string pattern) {
    for (size_t i = 0; i < o.size(); ++i) {
      const std::string key = "{" + std::to_string(i) + "}";
      for (size_t at; (at = pattern.find(key)) != std::string::npos;) pattern.replace(at, key.size(), o[i]);
    }
    return pattern;
  };
  if (auto it = unary.find(op); it != unary.end()) {
    if (auto s = need(1, 0); !s) return s.error();
    return fill(it->second);
  }
  if (auto it = binary.find(op); it != binary.end()) {
    if (auto s = need(2, 0); !s) return s.error();
    return fill(it->second);
  }
  if (op == "leaky_relu") {
    if (auto s = need(1, 1); !s) return s.error();
    return "ak_leaky_relu(" + o[0] + ", " + float_literal(n[0]) + ")";
  }
  if (op == "elu") {
    if (auto s = need(1, 3); !s) return s.error();
    return "ak_elu(" + o[0] + ", " + float_literal(n[0]) + ", " + float_literal(n[1]) + ", " + float_literal(n[2]) + ")";
  }
  if (op == "softplus") {
    if (auto s = need(1, 2); !s) return s.error();
    return "ak_softplus(" + o[0] + ", " + float_literal(n[0]) + ", " + float_literal(n[1]) + ")";
  }
  if (op == "clamp") {
    if (auto s = need(1, 2); !s) return s.error();
    std::string e = o[0];
    if (!std::isnan(n[0])) e = "ak_max(" + e + ", " + float_literal(n[0]) + ")";
    if (!std::isnan(n[1])) e = "ak_min(" + e + ", " + float_literal(n[1]) + ")";
    return e;
  }
  if (op == "threshold") {
    if (auto s = need(1, 2); !s) return s.error();
    return "(" + o[0] + " <= " + float_literal(n[0]) + " ? " + float_literal(n[1]) + " : " + o[0] + ")";
  }
  return error("step op \"" + op + "\" is not one the elementwise starter writes");
}

Result<std::string> elementwise_starter_text(const json& a, const std::string& type_name) {
  const json chain = a.value("elementwise", json());
  if (!chain.is_object() || !chain.contains("steps") || !chain.contains("output"))
    return error("the analysis has no elementwise steps: " + a.value("elementwise_why_not", std::string("no reason given")));
  if (a.value("grid", std::string()) != "elements") return error("the grid is not `elements`");
  if (a.value("outputs", json::array()).size() != 1 || !a.value("parameters", json::array()).empty() ||
      !a.value("buffers", json::array()).empty())
    return error("an elementwise starter takes inputs and one output only");
  auto n = element_count(a);
  if (!n) return n.error();
  const std::vector<std::string> names = kernelbench_argument_names(a);
  const size_t inputs = a["inputs"].size();
  if (chain.value("inputs", size_t(0)) != inputs) return error("the steps read another number of inputs than the spec has");

  std::string params, body;
  for (size_t i = 0; i < inputs; ++i) {
    params += "const T* __restrict__ " + names[i] + ", ";
    body += "      const float v" + std::to_string(i) + " = ak_to_float(" + names[i] + "[i]);\n";
  }
  params += "T* __restrict__ " + names.back();
  for (auto& d : a.value("dims", std::vector<std::string>{})) params += ", int " + d;
  size_t value = inputs;
  for (const json& step : chain["steps"]) {
    std::vector<std::string> operands;
    const size_t count = size_t(operand_count(step.value("op", std::string())));
    for (size_t i = 0; i < count && i < step["args"].size(); ++i) {
      const json& arg = step["args"][i];
      if (arg.contains("v") && value_index(arg["v"], value))
        operands.push_back("v" + std::to_string(arg["v"].get<long long>()));
      else if (arg.contains("n") && arg["n"].is_number())
        operands.push_back(float_literal(arg["n"].get<double>()));
      else
        return error("step " + std::to_string(value - inputs) + " has an operand that is no earlier value nor a number");
    }
    auto e = elementwise_step_expression(step, operands);
    if (!e) return e.error();
    body += "      const float v" + std::to_string(value) + " = " + *e + ";\n";
    ++value;
  }
  const json& output = chain["output"];
  if (!value_index(output, value)) return error("the steps' output is no value");
  body += "      " + names.back() + "[i] = ak_from_float<T>(v" + std::to_string(output.get<long long>()) + ");\n";

  std::string t;
  t += "// " + type_name + ": written by `autokernel kernelbench` from the forward's elementwise ops, a plain first\n"
       "// file for the builtin tuner (AK_THREADS, AK_ITEMS) or an LLM to start from. Each step is one fp32\n"
       "// operation as PyTorch computes it; each thread handles AK_ITEMS elements a block-width apart.\n"
       "// Grid rule `elements`: blocks = ceil(elements / (ak_block_threads * ak_items_per_thread)).\n";
  t += "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n\n";
  t += "#define AK_THREADS 256\n#define AK_ITEMS 4\n\n";
  t += "extern \"C\" __constant__ int ak_block_threads = AK_THREADS;\n";
  t += "extern \"C\" __constant__ int ak_items_per_thread = AK_ITEMS;\n\n";
  t += kHelpers;
  t += "\ntemplate <typename T>\n__global__ void __launch_bounds__(AK_THREADS)\n" + type_name + "_kernel(" + params + ") {\n";
  t += "  const long long n = " + *n + ";\n";
  t += "  const long long base = (long long)blockIdx.x * AK_THREADS * AK_ITEMS + threadIdx.x;\n";
  t += "#pragma unroll\n  for (int k = 0; k < AK_ITEMS; ++k) {\n";
  t += "    const long long i = base + (long long)k * AK_THREADS;\n";
  t += "    if (i < n) {\n" + body + "    }\n  }\n}\n";
  return t;
}

}  // namespace ak
