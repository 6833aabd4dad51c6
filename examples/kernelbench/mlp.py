import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A small whole model: an MLP of three Linear layers, ReLU after the first two:
    [batch, in] -> [batch, hidden] -> [batch, hidden] -> [batch, out].
    """

    def __init__(self, in_features, hidden, out_features):
        super(Model, self).__init__()
        self.fc1 = nn.Linear(in_features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


batch_size = 1024
in_features = 1024
hidden = 2048
out_features = 512


def get_inputs():
    x = torch.randn(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, hidden, out_features]
