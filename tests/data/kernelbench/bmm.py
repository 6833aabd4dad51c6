import torch
import torch.nn as nn


class Model(nn.Module):
    """A batched matrix multiplication."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, a, b):
        return torch.bmm(a, b)


batch_size = 32
m = 256
k = 512
n = 384


def get_inputs():
    return [torch.rand(batch_size, m, k), torch.rand(batch_size, k, n)]


def get_init_inputs():
    return []
