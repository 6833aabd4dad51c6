import torch
import torch.nn as nn


class Model(nn.Module):
    """Dropout with p = 0.2 after a linear layer: random in training mode, as KernelBench calls it."""

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        return self.dropout(self.linear(x))


batch_size = 64
in_features = 256
out_features = 256


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
