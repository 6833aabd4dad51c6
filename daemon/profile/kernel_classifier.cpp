#include "daemon/profile/kernel_classifier.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <regex>
#include <cstdlib>
#include <utility>
#include <vector>

namespace ak {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

// First match wins: attention before GEMM (flash kernels use wgmma too), losses before softmax
// (cross entropy runs a log_softmax), autokernel's own elementwise swiglu_kernel before a fused
// SwiGLU MLP, and that before the plain elementwise kernels.
const std::vector<std::pair<const char*, const char*>>& rules() {
  static const std::vector<std::pair<const char*, const char*>> r{
      {"flash", "flash_attention"},        {"fmha", "flash_attention"},      {"sdpa", "flash_attention"},
      {"attention", "flash_attention"},    {"cross_entropy", "cross_entropy"}, {"nll_loss", "cross_entropy"},
      {"log_softmax", "cross_entropy"},    {"logsoftmax", "cross_entropy"},  {"softmax", "softmax"},           {"rms_norm", "rmsnorm"},
      {"rmsnorm", "rmsnorm"},              {"layer_norm", "layernorm"},      {"layernorm", "layernorm"},
      {"rotary", "rotary_embedding"},      {"rope", "rotary_embedding"},     {"swiglu_kernel", "swiglu"},
      {"swiglu", "fused_mlp"},
      // Convolutions run as implicit GEMMs whose names say gemm or xmma too: they are no matmul of
      // a shape a matmul entry could take, but the work of their Conv module (a user type's).
      {"fprop", "other"},                  {"dgrad", "other"},               {"wgrad", "other"},
      {"convolve", "other"},               {"conv2d", "other"},              {"conv3d", "other"},
      {"conv1d", "other"},                 {"convolution", "other"},         {"depthwise", "other"},
      {"gemm", "matmul"},                  {"nvjet", "matmul"},              {"xmma", "matmul"},
      {"cutlass", "matmul"},               {"cublas", "matmul"},             {"matmul", "matmul"},
      {"reduce_kernel", "reduce"},         {"reduction", "reduce"},
  };
  return r;
}

}  // namespace

std::string demangle(const std::string& name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out(d);
  std::free(d);
  return out;
}

Classification classify_kernel(const std::string& name) {
  const std::string n = lower(name);
  // PyTorch 2.x runs F.rms_norm as its layer-norm kernel with the template flag rms_norm = true.
  static const std::regex rms_flag(R"(layer_norm_kernel<[^<>]*,\s*true>)");
  if (std::regex_search(n, rms_flag)) return {"rmsnorm", "memory", "layer_norm_kernel<..., true>"};
  for (auto& [pattern, type] : rules())
    if (n.find(pattern) != std::string::npos) {
      std::string t = type;
      bool compute = t == "matmul" || t == "flash_attention" || t == "fused_mlp";
      return {t, compute ? "compute" : "memory", pattern};
    }
  return {"other", "memory", ""};
}

std::string dtype_hint(const std::string& name) {
  const std::string n = lower(name);
  if (n.find("bfloat16") != std::string::npos || n.find("bf16") != std::string::npos) return "bf16";
  if (n.find("half") != std::string::npos || n.find("fp16") != std::string::npos || n.find("_f16") != std::string::npos) return "fp16";
  if (n.find("float") != std::string::npos) return "fp32";
  return "";
}

}  // namespace ak
