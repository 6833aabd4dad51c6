import torch
import torch.nn as nn


class Model(nn.Module):
    """A 2-D transposed convolution that doubles the spatial size."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super(Model, self).__init__()
        self.deconv = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                         output_padding=output_padding)

    def forward(self, x):
        return self.deconv(x)


batch_size = 8
in_channels = 16
out_channels = 8
height = 32
width = 48
kernel_size = 3
stride = 2
padding = 1
output_padding = 1


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding]
