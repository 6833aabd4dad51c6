import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A scaled residual add followed by LayerNorm over the hidden dimension:
    out = LayerNorm(x + scale * residual), with the norm's weight and bias as parameters.
    """

    def __init__(self, hidden, scale):
        super(Model, self).__init__()
        self.scale = scale
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        h = x + residual * self.scale
        return self.norm(h)


batch_size = 8192
hidden = 4096
scale = 0.5


def get_inputs():
    x = torch.randn(batch_size, hidden)
    residual = torch.randn(batch_size, hidden)
    return [x, residual]


def get_init_inputs():
    return [hidden, scale]
