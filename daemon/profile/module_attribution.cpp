#include "daemon/profile/module_attribution.hpp"

#include <regex>

#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include "common/parse_number.hpp"
#include "common/untrusted_text.hpp"
#include "daemon/profile/profile_data.hpp"

namespace ak {
namespace {

/// Features beyond which a Linear layer is not one: its products (rows x features) stay inside a long long.
constexpr long long kMaxFeatures = 1LL << 31;

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// The Linear child whose name holds `part` ("gate" matches gate_proj, w_gate, gate).
const LinearChild* linear_named(const ModuleRange& m, const std::string& part) {
  for (auto& l : m.linears)
    if (l.name.find(part) != std::string::npos) return &l;
  return nullptr;
}

std::vector<LinearChild> parse_linears(const std::string& text) {
  static const std::regex one(R"(([A-Za-z0-9_.]+):(\d+)x(\d+))");
  std::vector<LinearChild> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), one); it != std::sregex_iterator(); ++it) {
    auto in = parse_integer((*it)[2].str()), out_features = parse_integer((*it)[3].str());
    if (!in || !out_features || *in > kMaxFeatures || *out_features > kMaxFeatures) {
      spdlog::warn("an NVTX range gives the Linear {} as {}: no layer has so many features; its Linear layers are left unread",
                   untrusted_line((*it)[1].str(), 80), untrusted_line((*it)[0].str(), 120));
      return {};
    }
    out.push_back({(*it)[1], *in, *out_features});
  }
  return out;
}

long long leading_product(const std::vector<long long>& dims) {
  long long rows = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) rows *= dims[i];
  return rows;
}

/// Rows of a GEMM beyond which a Linear's input is not believed: far past any batch a GPU holds.
constexpr long long kMaxGemmRows = 1LL << 40;

}  // namespace

std::vector<long long> linear_gemm_shape(const ModuleRange& m) {
  if (m.kind != "module" || (m.name != "Linear" && m.class_qualname != "Linear") || m.kwargs.empty() || m.sizes.empty() ||
      m.sizes[0].empty())
    return {};
  const auto kw = nlohmann::json::parse(m.kwargs, nullptr, false);
  if (!kw.is_object()) return {};
  const auto in = kw.find("in_features"), out = kw.find("out_features"), bias = kw.find("bias");
  if (in == kw.end() || out == kw.end() || !in->is_number_integer() || !out->is_number_integer()) return {};
  const long long k = in->get<long long>(), n = out->get<long long>();
  const std::vector<long long>& x = m.sizes[0];
  if (k < 1 || n < 1 || k > kMaxFeatures || n > kMaxFeatures || x.back() != k) return {};
  long long rows = 1;
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    if (x[i] < 0 || (x[i] > 0 && rows > kMaxGemmRows / x[i])) return {};
    rows *= x[i];
  }
  if (rows < 1) return {};
  return {rows, n, k, bias != kw.end() && bias->is_boolean() && bias->get<bool>() ? 1 : 0};
}

std::optional<ModuleRange> parse_module_range(const std::string& range) {
  static const std::regex head(R"(^ak\.(module|function):([A-Za-z_][A-Za-z0-9_]*))");
  std::smatch m;
  if (!std::regex_search(range, m, head)) return std::nullopt;
  ModuleRange r;
  r.kind = m[1];
  r.name = m[2];
  r.sizes = nvtx_shapes(range);
  static const std::regex dtype(R"( dtype=(fp16|bf16|fp32))"), linear(R"( linear=(\S+))"), act(R"( act=(\S+))");
  if (std::regex_search(range, m, dtype)) r.dtype = m[1];
  if (std::regex_search(range, m, linear)) r.linears = parse_linears(m[1]);
  if (std::regex_search(range, m, act)) r.activation = m[1];
  static const std::regex layout(R"( layout=([0-2])\b)");
  if (std::regex_search(range, m, layout)) r.layout = int(parse_integer(m[1].str()).value_or(0));
  static const std::regex cls(R"( class=([^\s:]+):(\S+))"), init(R"( init=(yes|no|differs|args|untried)\b)");
  if (std::regex_search(range, m, cls)) r.class_module = m[1], r.class_qualname = m[2];
  if (std::regex_search(range, m, init)) r.init = m[1];
  static const std::regex kwargs(R"( kwargs=(\{\S{0,400}\}))"), train(R"( train=([01])\b)");
  if (std::regex_search(range, m, kwargs)) r.kwargs = m[1];
  if (std::regex_search(range, m, train)) r.training = m[1] == "1";
  static const std::regex counts[] = {std::regex(R"( params=(\d{1,9})\b)"), std::regex(R"( buffers=(\d{1,9})\b)"),
                                      std::regex(R"( leaf=([01])\b)"), std::regex(R"( args=(\d{1,9})\b)")};
  int* fields[] = {&r.parameters, &r.buffers, &r.leaf, &r.args};
  for (size_t i = 0; i < 4; ++i)
    if (std::regex_search(range, m, counts[i])) *fields[i] = int(parse_integer(m[1].str()).value_or(0));   // at most 9 digits
  return r;
}

std::string classify_module(const ModuleRange& m) {
  if (m.kind == "function") return m.name == "apply_rotary_pos_emb" ? "rotary_embedding" : "";
  if (ends_with(m.name, "RMSNorm")) return "rmsnorm";
  if (ends_with(m.name, "LayerNorm")) return "layernorm";
  if (ends_with(m.name, "Softmax")) return "softmax";
  // A gated MLP's own work, beside its three GEMMs, is the gate product: its row is a swiglu, and
  // its projections stay matmul rows (profile_data.cpp), since cuBLAS is what they should run. Only
  // when it gates with a SiLU module (torch's, or transformers' own class): the exported op stands
  // in for nothing else, so a plan counting another MLP's activation would promise a gain no patch
  // delivers.
  if (ends_with(m.name, "MLP") && linear_named(m, "gate") && linear_named(m, "up") && linear_named(m, "down") &&
      (m.activation == "SiLU" || m.activation == "SiLUActivation"))
    return "swiglu";
  return "";
}

std::vector<long long> module_shape(const std::string& type, const ModuleRange& m) {
  if (m.sizes.empty() || m.sizes[0].empty()) return {};
  const std::vector<long long>& x = m.sizes[0];
  if (type == "rmsnorm" || type == "layernorm" || type == "softmax") return {leading_product(x), x.back()};
  if (type == "rotary_embedding") {
    // The helper rotates q and k: [B, Hq, Hk, S, D, layout], the shape of the contract's version 2.
    // A hook that said no layout is transformers' helper on its projections' views: layout 1.
    if (x.size() != 4) return {};
    long long k_heads = x[1];
    if (m.sizes.size() > 1 && m.sizes[1].size() == 4 && m.sizes[1][0] == x[0] && m.sizes[1][2] == x[2] && m.sizes[1][3] == x[3])
      k_heads = m.sizes[1][1];
    return {x[0], x[1], k_heads, x[2], x[3], m.layout >= 0 ? m.layout : 1};
  }
  if (type == "swiglu") {
    // [rows, cols, ld]: tokens, hidden width, and the row stride of gate and up as the op reads
    // them: the width, for two projections apart; twice it, for the halves of one fused gate_up
    // projection (Phi-3's, whose Linear holds both words).
    const LinearChild* gate = linear_named(m, "gate");
    if (!gate || gate->in != x.back()) return {};
    if (gate->name.find("up") == std::string::npos) return {leading_product(x), gate->out, gate->out};
    if (gate->out % 2 != 0) return {};
    return {leading_product(x), gate->out / 2, gate->out};
  }
  return {};
}

}  // namespace ak
