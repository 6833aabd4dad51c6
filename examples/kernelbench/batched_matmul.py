import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A batched matrix multiplication: [batch, m, k] @ [batch, k, n] -> [batch, m, n] (torch.bmm).
    """

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.bmm(a, b)


batch_size = 32
m = 512
k = 1024
n = 512


def get_inputs():
    a = torch.randn(batch_size, m, k)
    b = torch.randn(batch_size, k, n)
    return [a, b]


def get_init_inputs():
    return []
