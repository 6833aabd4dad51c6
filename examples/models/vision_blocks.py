"""A small vision network built here, random weights: a ResNet-style stem and bottleneck stage (3x3
and 1x1 convolutions, BatchNorm2d, ReLU, max pooling) and a ConvNeXt-style stage (a 7x7 depthwise
convolution, a LayerNorm over channels in channels-last layout, a GELU MLP), batch 32 at 112x112.

Its hot modules are convolutions, norms with weights, pooling and activations: modules of none of
autokernel's built-in types, which `plan --user-types` offers as user types, each layer rebuilt from
the arguments it keeps and its weights passed to the kernel as inputs (docs/user-types.md, "From a
profile"):

    autokernel profile --modules --warmup-s 1 --out vision.json -- python3 examples/models/vision_blocks.py --nvtx
    autokernel plan vision.json --top 20 --user-types types --write vision-run.toml
"""
import torch
import torch.nn as nn

BATCH, SIDE, WIDTH = 32, 112, 64


class Bottleneck(nn.Module):
    """ResNet's bottleneck: 1x1 down, 3x3, 1x1 up, each with BatchNorm, and the residual."""

    def __init__(self, channels, inner):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(channels, inner, 1, bias=False), nn.BatchNorm2d(inner)
        self.conv2, self.bn2 = nn.Conv2d(inner, inner, 3, padding=1, bias=False), nn.BatchNorm2d(inner)
        self.conv3, self.bn3 = nn.Conv2d(inner, channels, 1, bias=False), nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        return self.relu(x + self.bn3(self.conv3(y)))


class ChannelsLastNorm(nn.Module):
    """ConvNeXt's LayerNorm over channels: the permutes are the model's, the norm is nn.LayerNorm."""

    def __init__(self, channels):
        super().__init__()
        self.norm = nn.LayerNorm(channels, eps=1e-6)

    def forward(self, x):
        return self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """A 7x7 depthwise convolution, the norm, a 4x GELU MLP as 1x1 convolutions, the residual."""

    def __init__(self, channels):
        super().__init__()
        self.dwconv = nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = ChannelsLastNorm(channels)
        self.pwconv1, self.act, self.pwconv2 = nn.Conv2d(channels, 4 * channels, 1), nn.GELU(), nn.Conv2d(4 * channels, channels, 1)

    def forward(self, x):
        return x + self.pwconv2(self.act(self.pwconv1(self.norm(self.dwconv(x)))))


def build(dtype):
    """The model and its input for `autokernel verify`."""
    model = nn.Sequential(
        nn.Conv2d(3, WIDTH, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(WIDTH), nn.ReLU(),
        nn.MaxPool2d(3, stride=2, padding=1),
        Bottleneck(WIDTH, WIDTH // 2), Bottleneck(WIDTH, WIDTH // 2),
        ConvNeXtBlock(WIDTH), ConvNeXtBlock(WIDTH),
    ).cuda().to(dtype).eval()
    return model, (torch.randn(BATCH, 3, SIDE, SIDE, device="cuda", dtype=dtype),)


if __name__ == "__main__":
    from common import dtype_of, parse_args, run

    args = parse_args(__doc__)
    torch.manual_seed(0)
    model, (x,) = build(dtype_of(args.dtype))
    run(lambda: model(x), args, f"vision blocks, batch {BATCH} at {SIDE}x{SIDE}")
