import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A 2-D convolution with its bias, square kernel, stride 1 and padding 1 (a "same" convolution):
    [batch, in_channels, height, width] -> [batch, out_channels, out_h, out_w].
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
in_channels = 32
out_channels = 64
height = 128
width = 128
kernel_size = 3
stride = 1
padding = 1


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
