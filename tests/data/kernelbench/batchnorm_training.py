import torch
import torch.nn as nn


class Model(nn.Module):
    """BatchNorm2d as built: in training mode, normalised by the batch's own statistics."""

    def __init__(self, features):
        super(Model, self).__init__()
        self.bn = nn.BatchNorm2d(features)

    def forward(self, x):
        return self.bn(x)


batch_size = 16
features = 32
height = 64
width = 64


def get_inputs():
    return [torch.rand(batch_size, features, height, width)]


def get_init_inputs():
    return [features]
