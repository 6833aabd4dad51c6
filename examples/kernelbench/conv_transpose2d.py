import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A transposed 2-D convolution without bias that doubles the image (kernel 4, stride 2, padding
    1): [batch, in_channels, height, width] -> [batch, out_channels, 2 * height, 2 * width].
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding):
        super(Model, self).__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_transpose(x)


batch_size = 16
in_channels = 64
out_channels = 32
height = 64
width = 64
kernel_size = 4
stride = 2
padding = 1


def get_inputs():
    x = torch.randn(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
