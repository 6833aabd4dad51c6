import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A GEMM followed by a reduction over its features: the largest of x @ W^T + b in each row
    (nn.Linear, then torch.max over dim 1 with keepdim): [batch, in] -> [batch, 1].
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(self.linear(x), dim=1, keepdim=True)[0]


batch_size = 1024
in_features = 4096
out_features = 4096


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
