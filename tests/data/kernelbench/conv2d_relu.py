import torch
import torch.nn as nn


class Model(nn.Module):
    """A 2-D convolution (padding 1, stride 2) followed by ReLU."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding)

    def forward(self, x):
        return torch.relu(self.conv(x))


batch_size = 16
in_channels = 8
out_channels = 32
height = 64
width = 96
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
