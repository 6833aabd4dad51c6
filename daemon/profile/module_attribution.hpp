#pragma once
/// Kernels by the PyTorch module that launched them. `autokernel profile --modules` loads
/// daemon/profile/module_hook/sitecustomize.py beside the program, which wraps each nn.Module
/// forward (and the rotary helper functions) in an NVTX range; this file reads those ranges back,
/// says which of autokernel's types a module stands for, and in which shape.
#include <optional>
#include <string>
#include <vector>

namespace ak {

/// One nn.Linear child of a module: its name and features, from the range's "linear=" field.
struct LinearChild {
  std::string name;
  long long in = 0, out = 0;
};

/// A range the hook pushed: "ak.module:LlamaRMSNorm sizes=[[2, 2048, 2048]] dtype=fp16".
struct ModuleRange {
  std::string kind;                          ///< "module" or "function"
  std::string name;                          ///< the class or function name
  std::vector<std::vector<long long>> sizes; ///< the tensor arguments' shapes, in order
  std::string dtype;                         ///< of the first tensor argument: fp16, bf16, fp32 or ""
  std::vector<LinearChild> linears;
  std::string activation;                    ///< the class of its act_fn child ("SiLUActivation"); "" unsaid
  int layout = -1;                           ///< a rotary helper's q: the rotary contract's layout code; -1 unsaid
  /// What a reference of the module needs (" class=mod:Qual params=N buffers=N leaf=1 init=yes args=N");
  /// empty or -1 where the range does not say (profiles made before the hook recorded them).
  std::string class_module, class_qualname;  ///< type(m).__module__ and __qualname__
  int parameters = -1, buffers = -1;         ///< counts, the children's included
  int leaf = -1;                             ///< 1: no child modules
  std::string init;                          ///< yes | no | differs (a no-argument instance is not this one) | args | untried
  /// init=args: the JSON object of keyword arguments that rebuild torch.nn's class as the program
  /// built it (checked by the hook on the meta device); empty otherwise.
  std::string kwargs;
  int training = -1;                         ///< the module's mode when called: 1 training, 0 eval, -1 unsaid
  int args = -1;                             ///< positional arguments of the call, tensors or not
};

/// The GEMM an nn.Linear call runs, in matmul's terms (contract version 2, y = x W^T + bias):
/// {M, N, K, has_bias}, M the rows of its input, N its out_features, K its in_features, from the
/// torch.nn arguments the hook records (kwargs=); empty when the range is not an nn.Linear's, does
/// not give its features, or its input's last dimension is not in_features.
std::vector<long long> linear_gemm_shape(const ModuleRange& m);

/// The hook's range, or nothing for any other range (PyTorch's own, the program's).
std::optional<ModuleRange> parse_module_range(const std::string& range);

/// The kernel type a module or function stands for, "" for none. By name: *RMSNorm -> rmsnorm,
/// *LayerNorm -> layernorm, *Softmax -> softmax, apply_rotary_pos_emb -> rotary_embedding, and
/// *MLP with gate, up and down Linear children (or one gate_up Linear, Phi-3's) and a SiLU act_fn
/// (activation_fn) -> swiglu (its gate product; its
/// projections stay matmul rows; a GELU-gated MLP, or one whose activation the range does not name,
/// is none: the exported op serves only an act_fn that is a SiLU module). Attention modules are left to the kernels inside them: they also hold the q/k/v/o
/// projections, which are matmuls of their own.
std::string classify_module(const ModuleRange& m);

/// The shape in the type's terms (its spec's shape names), from the module's inputs; empty when
/// they do not give it. The rotary helper, which rotates q and k, counts as one rotation of both.
std::vector<long long> module_shape(const std::string& type, const ModuleRange& m);

}  // namespace ak
