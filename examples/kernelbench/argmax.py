import torch
import torch.nn as nn


class Model(nn.Module):
    """
    The index of the largest value along the middle axis of [batch, dim1, dim2]: int64
    [batch, dim2], the first index where the largest value repeats. `dim` is the axis, not a size.
    """

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


batch_size = 32
dim1 = 1024
dim2 = 1024
dim = 1


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x]


def get_init_inputs():
    return [dim]
