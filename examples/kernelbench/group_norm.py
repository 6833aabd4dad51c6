import torch
import torch.nn as nn


class Model(nn.Module):
    """
    GroupNorm over [batch, channels, height, width] with 8 groups and an affine weight and bias,
    drawn away from PyTorch's ones and zeros so that a kernel that ignores them is told apart.
    """

    def __init__(self, num_groups, channels):
        super(Model, self).__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=channels)
        with torch.no_grad():
            self.gn.weight.uniform_(0.5, 1.5)
            self.gn.bias.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 16
channels = 64
height = 128
width = 128
num_groups = 8


def get_inputs():
    x = torch.randn(batch_size, channels, height, width)
    return [x]


def get_init_inputs():
    return [num_groups, channels]
