import torch
import torch.nn as nn


class Model(nn.Module):
    """The index of the largest value along the middle axis (an int64 output)."""

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        return torch.argmax(x, dim=self.dim)


batch_size = 64
reduce_size = 256
features = 512
dim = 1


def get_inputs():
    return [torch.rand(batch_size, reduce_size, features)]


def get_init_inputs():
    return [dim]
