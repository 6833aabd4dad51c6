"""The module hook of `autokernel profile --modules` (daemon/profile/module_hook/sitecustomize.py),
in a real interpreter with a stand-in `torch` package: it installs itself only when the program
imports torch, and names module forwards and the rotary helper in the format
daemon/profile/module_attribution.cpp parses. Run by ctest."""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

_HERE = os.path.dirname(os.path.abspath(__file__))
_HOOK = os.path.abspath(os.path.join(_HERE, "../../../daemon/profile/module_hook"))

# A stand-in torch: Tensor with shape and dtype, nn.Module calling the global hooks, nn.Linear,
# and cuda.nvtx recording what is pushed.
_FAKE_TORCH = textwrap.dedent('''
    class dtype:
        def __init__(self, name): self.name = name
        def __str__(self): return "torch." + self.name
    float16 = dtype("float16")
    class Tensor:
        def __init__(self, *shape, dtype=float16): self.shape, self.dtype, self.dense = list(shape), dtype, False
        def dim(self): return len(self.shape)
        def is_contiguous(self): return self.dense
        def transpose(self, a, b):  # a projection's view: dense once transposed back
            t = Tensor(*self.shape, dtype=self.dtype)
            t.dense = True
            return t
''')
_FAKE_MODULE = textwrap.dedent('''
    _pre, _post = [], []
    def register_module_forward_pre_hook(h): _pre.append(h)
    def register_module_forward_hook(h, always_call=False): _post.append(h)
    class Module:
        def named_children(self):
            return [(k, v) for k, v in vars(self).items() if isinstance(v, Module)]
        def __call__(self, *args):
            for h in _pre: h(self, args)
            try: return self.forward(*args)
            finally:
                for h in _post: h(self, args, None)
''')
_FAKE_NN = "from .modules.module import Module\nclass Linear(Module):\n    def __init__(self, i, o): self.in_features, self.out_features = i, o\n    def forward(self, x): return x\n"
_FAKE_NVTX = "pushed = []\ndef range_push(s): pushed.append(s)\ndef range_pop(): pass\n"

_PROGRAM = textwrap.dedent('''
    import torch
    import torch.nn as nn

    def apply_rotary_pos_emb(q, k, cos, sin):
        return q, k

    class LlamaRMSNorm(nn.Module):
        def forward(self, x): return x

    class LlamaMLP(nn.Module):
        def __init__(self):
            self.gate_proj, self.up_proj, self.down_proj = nn.Linear(2048, 5632), nn.Linear(2048, 5632), nn.Linear(5632, 2048)
        def forward(self, x): return self.down_proj(x)

    x = torch.Tensor(2, 2048, 2048)
    LlamaRMSNorm()(x)
    LlamaMLP()(x)
    q = torch.Tensor(2, 16, 2048, 128)
    apply_rotary_pos_emb(q, q, torch.Tensor(1, 2048, 128), torch.Tensor(1, 2048, 128))
    import torch.cuda.nvtx as nvtx
    print("\\n".join(nvtx.pushed))
''')


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class ModuleHook(unittest.TestCase):
    def run_program(self, program):
        with tempfile.TemporaryDirectory() as root:
            write(root, "torch/__init__.py", _FAKE_TORCH + "from . import nn, cuda\n")
            write(root, "torch/nn/__init__.py", _FAKE_NN)
            write(root, "torch/nn/modules/__init__.py", "")
            write(root, "torch/nn/modules/module.py", _FAKE_MODULE)
            write(root, "torch/cuda/__init__.py", "from . import nvtx\n")
            write(root, "torch/cuda/nvtx.py", _FAKE_NVTX)
            write(root, "program.py", program)
            env = dict(os.environ, PYTHONPATH=f"{_HOOK}:{root}")
            return subprocess.run([sys.executable, os.path.join(root, "program.py")], env=env, capture_output=True,
                                  text=True, timeout=60)

    def test_module_forwards_and_the_rotary_helper_are_named_with_their_shapes(self):
        r = self.run_program(_PROGRAM)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertIn("ak.module:LlamaRMSNorm sizes=[[2, 2048, 2048]] dtype=fp16", lines)
        self.assertIn("ak.module:LlamaMLP sizes=[[2, 2048, 2048]] dtype=fp16 "
                      "linear=gate_proj:2048x5632,up_proj:2048x5632,down_proj:5632x2048", lines)
        self.assertIn("ak.module:Linear sizes=[[2, 2048, 2048]] dtype=fp16", lines)
        self.assertIn("ak.function:apply_rotary_pos_emb sizes=[[2, 16, 2048, 128], [2, 16, 2048, 128], "
                      "[1, 2048, 128], [1, 2048, 128]] dtype=fp16 layout=1", lines)
        self.assertIn("NVTX ranges around every nn.Module forward", r.stderr)

    def test_a_program_that_never_imports_torch_is_left_alone(self):
        r = self.run_program("import sys\nprint('torch' in sys.modules)\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "False")
        self.assertEqual(r.stderr, "")


if __name__ == "__main__":
    unittest.main()
