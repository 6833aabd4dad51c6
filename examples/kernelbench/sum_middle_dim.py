import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Sum over the middle dimension of a 3-D tensor: [batch, reduce, features] -> [batch, features].
    `dim` is the axis, not a size.
    """

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


batch_size = 64
reduce_size = 512
features = 4096
dim = 1


def get_inputs():
    x = torch.rand(batch_size, reduce_size, features)
    return [x]


def get_init_inputs():
    return [dim]
