import torch
import torch.nn as nn


class Model(nn.Module):
    """A small MLP: three linear layers with ReLU between them."""

    def __init__(self, input_size, hidden_size, output_size):
        super(Model, self).__init__()
        self.net = nn.Sequential(nn.Linear(input_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, hidden_size),
                                 nn.ReLU(), nn.Linear(hidden_size, output_size))

    def forward(self, x):
        return self.net(x)


batch_size = 128
input_size = 512
hidden_size = 1024
output_size = 10


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
