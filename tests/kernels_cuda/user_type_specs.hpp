#pragma once
// Small user types written in the tests: a GELU (elementwise), a row-wise log-softmax, and a
// matmul + bias + ReLU with parameters, each as a spec text and a KernelBench-style reference.
#include <string>

#include "tests/support.hpp"

namespace ak::test {

inline const char* kGeluSpec = R"(name = "gelu_tanh"
summary = "GELU with the tanh approximation, elementwise"
reference = "gelu_tanh.py"
kind = "elementwise"
grid = "elements"
dtypes = ["fp32", "fp16"]
dims = ["batch_size", "dim"]
bench = [4096, 393216]
smoke = [4, 1000]
sweep = [[64, 4096], [33, 1531]]
edge = [[1, 1], [3, 7]]

[[tensor]]
name = "x"
role = "input"
shape = ["batch_size", "dim"]
type = "float"

[[tensor]]
name = "out"
role = "output"
shape = ["batch_size", "dim"]
type = "float"
)";

inline const char* kGeluReference = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x, approximate="tanh")

batch_size = 4096
dim = 393216

def get_inputs():
    return [torch.randn(batch_size, dim)]

def get_init_inputs():
    return []
)";

inline const char* kLogSoftmaxSpec = R"(name = "log_softmax_rows"
reference = "log_softmax.py"
kind = "rowwise"
grid = "rows"
dims = ["batch_size", "dim"]
smoke = [4, 1000]
sweep = [[64, 4096], [7, 65537]]
stability = [16, 2048]
edge = [[1, 1]]
tolerance = { fp32 = 1e-5 }

[fixed]
reduce_dim = 1

[[tensor]]
name = "x"
role = "input"
shape = ["batch_size", "dim"]
type = "float"

[[tensor]]
name = "y"
role = "output"
shape = ["batch_size", "dim"]
type = "float"
)";

inline const char* kLogSoftmaxReference = R"(import torch
batch_size = 256   # rows
dim = 16_384
reduce_dim = 1
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.log_softmax(x, dim=reduce_dim)
def get_inputs():
    return [torch.randn(batch_size, dim)]
def get_init_inputs():
    return []
)";

inline const char* kMatmulSpec = R"(name = "matmul_bias_relu"
reference = "mbr.py"
kind = "gemm_epilogue"
grid = "tiles"
dims = ["batch_size", "in_features", "out_features"]
bench = [1024, 8192, 8192]
smoke = [8, 64, 32]
sweep = [[128, 256, 512], [33, 100, 70]]
edge = [[1, 1, 1]]
flops = "2 * batch_size * in_features * out_features"

[[tensor]]
name = "x"
role = "input"
shape = ["batch_size", "in_features"]
type = "float"

[[tensor]]
name = "weight"
role = "parameter"
shape = ["out_features", "in_features"]
type = "float"

[[tensor]]
name = "bias"
role = "parameter"
shape = ["out_features"]
type = "float"

[[tensor]]
name = "out"
role = "output"
shape = ["batch_size", "out_features"]
type = "float"
)";

}  // namespace ak::test
