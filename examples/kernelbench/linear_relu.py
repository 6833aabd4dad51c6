import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A small GEMM with its bias and a ReLU: relu(x @ W^T + b) with nn.Linear.
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


batch_size = 1024
in_features = 2048
out_features = 2048


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
