import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer whose outputs are summed over the features (a reduction after a GEMM)."""

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.sum(self.linear(x), dim=1, keepdim=True)


batch_size = 512
in_features = 1024
out_features = 2048


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
