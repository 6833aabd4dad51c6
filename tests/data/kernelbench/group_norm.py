import torch
import torch.nn as nn


class Model(nn.Module):
    """GroupNorm: channels in groups of channels / num_groups, normalised over each group and the spatial axes."""

    def __init__(self, num_groups, channels):
        super(Model, self).__init__()
        self.norm = nn.GroupNorm(num_groups, channels)

    def forward(self, x):
        return self.norm(x)


batch_size = 16
channels = 64
num_groups = 8
height = 32
width = 32


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [num_groups, channels]
