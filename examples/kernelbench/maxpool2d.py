import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Max pooling over 3 x 3 windows with stride 2 and padding 1 (the stem pooling of a ResNet):
    [batch, channels, height, width] -> [batch, channels, out_h, out_w].
    """

    def __init__(self, kernel_size, stride, padding):
        super(Model, self).__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 32
channels = 64
height = 128
width = 128
kernel_size = 3
stride = 2
padding = 1


def get_inputs():
    x = torch.rand(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding]
