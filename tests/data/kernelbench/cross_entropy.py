import torch
import torch.nn as nn


class Model(nn.Module):
    """Cross entropy of logits against int64 class labels, averaged to a scalar."""

    def __init__(self):
        super(Model, self).__init__()

    def forward(self, logits, labels):
        return torch.nn.functional.cross_entropy(logits, labels)


batch_size = 4096
num_classes = 1000


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
