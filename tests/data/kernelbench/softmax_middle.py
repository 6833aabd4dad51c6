import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over the middle axis of a 3-D tensor."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 32
length = 512
features = 256


def get_inputs():
    return [torch.randn(batch_size, length, features)]


def get_init_inputs():
    return []
