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
        def children(self): return [v for _, v in self.named_children()]
        def parameters(self): return list(vars(self).get("_test_parameters", []))
        def buffers(self): return list(vars(self).get("_test_buffers", []))
        def __call__(self, *args):
            for h in _pre: h(self, args)
            try: return self.forward(*args)
            finally:
                for h in _post: h(self, args, None)
''')
_FAKE_NN = "from .modules.module import Module\nclass Linear(Module):\n    def __init__(self, i, o): self.in_features, self.out_features = i, o\n    def forward(self, x): return x\n"
# The program's random state, which fork_rng keeps as torch's does.
_FAKE_RANDOM = textwrap.dedent('''
    import contextlib
    state = [0]
    def draw():
        state[0] += 1
        return state[0]
    @contextlib.contextmanager
    def fork_rng(devices=()):
        saved = state[0]
        try: yield
        finally: state[0] = saved
''')
_FAKE_NVTX = "pushed = []\ndef range_push(s): pushed.append(s)\ndef range_pop(): pass\n"

_PROGRAM = textwrap.dedent('''
    import torch
    import torch.nn as nn

    def apply_rotary_pos_emb(q, k, cos, sin):
        return q, k

    class LlamaRMSNorm(nn.Module):
        def forward(self, x): return x

    class SiLUActivation(nn.Module):
        def forward(self, x): return x

    class LlamaMLP(nn.Module):
        def __init__(self):
            self.gate_proj, self.up_proj, self.down_proj = nn.Linear(2048, 5632), nn.Linear(2048, 5632), nn.Linear(5632, 2048)
            self.act_fn = SiLUActivation()
        def forward(self, x): return self.down_proj(self.act_fn(x))

    class Phi3MLP(nn.Module):
        def __init__(self):
            self.gate_up_proj, self.down_proj = nn.Linear(2048, 11264), nn.Linear(5632, 2048)
            self.activation_fn = SiLUActivation()
        def forward(self, x): return self.down_proj(self.activation_fn(x))

    x = torch.Tensor(2, 2048, 2048)
    LlamaRMSNorm()(x)
    LlamaMLP()(x)
    Phi3MLP()(x)
    q = torch.Tensor(2, 16, 2048, 128)
    apply_rotary_pos_emb(q, q, torch.Tensor(1, 2048, 128), torch.Tensor(1, 2048, 128))
    import torch.cuda.nvtx as nvtx
    print("\\n".join(nvtx.pushed))
''')


# Modules that a reference can be made of, and modules that it cannot.
_REFERENCE_PROGRAM = textwrap.dedent('''
    import torch
    import torch.nn as nn
    import torch.random

    built = [0]

    class Gelu(nn.Module):
        def __init__(self, approximate="none"):
            built[0] += 1
            print("constructing Gelu")
            torch.random.draw()
            self.approximate = approximate
        def forward(self, x): return x

    class Scale(nn.Module):
        def __init__(self, factor): self.factor = factor
        def forward(self, x, y): return x

    class Norm(nn.Module):
        def __init__(self): self._test_parameters, self._test_buffers = ["weight"], ["running_mean"]
        def forward(self, x): return x

    class Block(nn.Module):
        def __init__(self): self.act = Gelu()
        def forward(self, x): return self.act(x)

    class Blocks:
        class Inner(nn.Module):
            def __init__(self, *args):
                if not args: raise SystemExit("needs arguments")
            def forward(self, x): return x

    x = torch.Tensor(8, 3072)
    Gelu()(x)
    Gelu("tanh")(x)
    Scale(2.0)(x, 3.0)
    Norm()(x)
    Block()(x)
    Blocks.Inner(1)(x)
    import torch.cuda.nvtx as nvtx
    print("\\n".join(nvtx.pushed))
    print("random state", torch.random.state[0])
    print("gelu constructors", built[0])
    print("done")
''')


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class ModuleHook(unittest.TestCase):
    def run_program(self, program):
        with tempfile.TemporaryDirectory() as root:
            write(root, "torch/__init__.py", _FAKE_TORCH + "from . import nn, cuda, random\n")
            write(root, "torch/random.py", _FAKE_RANDOM)
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
        self.assertIn("ak.module:LlamaRMSNorm sizes=[[2, 2048, 2048]] dtype=fp16 "
                      "class=__main__:LlamaRMSNorm params=0 buffers=0 leaf=1 init=yes train=0 args=1", lines)
        self.assertIn("ak.module:LlamaMLP sizes=[[2, 2048, 2048]] dtype=fp16 "
                      "linear=gate_proj:2048x5632,up_proj:2048x5632,down_proj:5632x2048 act=SiLUActivation "
                      "class=__main__:LlamaMLP params=0 buffers=0 leaf=0 init=untried train=0 args=1", lines)
        self.assertIn("ak.module:Phi3MLP sizes=[[2, 2048, 2048]] dtype=fp16 "
                      "linear=gate_up_proj:2048x11264,down_proj:5632x2048 act=SiLUActivation "
                      "class=__main__:Phi3MLP params=0 buffers=0 leaf=0 init=untried train=0 args=1", lines)
        self.assertIn("ak.module:Linear sizes=[[2, 2048, 2048]] dtype=fp16 "
                      "class=torch.nn:Linear params=0 buffers=0 leaf=1 init=no train=0 args=1", lines)
        self.assertIn("ak.function:apply_rotary_pos_emb sizes=[[2, 16, 2048, 128], [2, 16, 2048, 128], "
                      "[1, 2048, 128], [1, 2048, 128]] dtype=fp16 layout=1", lines)
        self.assertIn("NVTX ranges around every nn.Module forward", r.stderr)

    def test_each_class_records_what_a_reference_of_it_needs(self):
        r = self.run_program(_REFERENCE_PROGRAM)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        fields = lambda qualname: next("class=" + l.split(" class=", 1)[1] for l in lines
                                       if " class=__main__:" + qualname + " " in l)
        self.assertEqual(fields("Gelu"), "class=__main__:Gelu params=0 buffers=0 leaf=1 init=yes train=0 args=1")
        # The same class built with another argument than its default: not what Gelu() builds.
        self.assertIn("ak.module:Gelu sizes=[[8, 3072]] dtype=fp16 class=__main__:Gelu params=0 buffers=0 leaf=1 "
                      "init=differs train=0 args=1", lines)
        self.assertEqual(fields("Scale"), "class=__main__:Scale params=0 buffers=0 leaf=1 init=no train=0 args=2")
        self.assertEqual(fields("Norm"), "class=__main__:Norm params=1 buffers=1 leaf=1 init=untried train=0 args=1")
        self.assertEqual(fields("Block"), "class=__main__:Block params=0 buffers=0 leaf=0 init=untried train=0 args=1")
        self.assertEqual(fields("Blocks.Inner"), "class=__main__:Blocks.Inner params=0 buffers=0 leaf=1 init=no train=0 args=1")

    def test_trying_a_constructor_never_changes_the_program(self):
        r = self.run_program(_REFERENCE_PROGRAM)
        self.assertEqual(r.returncode, 0, r.stderr)
        # Gelu's constructor prints and draws: once for the program's two instances, none of it seen
        # by the program; Inner's raises SystemExit, which the hook keeps from ending the program.
        self.assertEqual(r.stdout.count("constructing Gelu"), 3)  # the program's three instances
        self.assertIn("random state 3", r.stdout)
        self.assertIn("gelu constructors 4", r.stdout)  # and one tried by the hook
        self.assertIn("done", r.stdout)

    def test_a_program_that_never_imports_torch_is_left_alone(self):
        r = self.run_program("import sys\nprint('torch' in sys.modules)\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "False")
        self.assertEqual(r.stderr, "")



# torch.nn layers with weights, and one built with an argument of its own, in a real torch.
_LAYERS_PROGRAM = textwrap.dedent('''
    import torch
    import torch.nn as nn
    pushed = []
    torch.cuda.nvtx.range_push = pushed.append
    torch.cuda.nvtx.range_pop = lambda: None
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.GELU(approximate="tanh"),
                        nn.Conv2d(8, 8, 3, groups=8, bias=False))
    net.eval().double()  # cast as a program casts its layers: still rebuilt by their arguments
    net(torch.randn(2, 3, 16, 16, dtype=torch.float64))
    print("\\n".join(pushed))
    print("next draw", float(torch.rand(1)))
''')


class ModuleHookOnTorch(unittest.TestCase):
    def setUp(self):
        if subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode != 0:
            self.skipTest("torch is not installed here")

    def run_layers(self, hooked):
        with tempfile.TemporaryDirectory() as root:
            write(root, "program.py", _LAYERS_PROGRAM)
            env = dict(os.environ, PYTHONPATH=_HOOK if hooked else "")
            return subprocess.run([sys.executable, os.path.join(root, "program.py")], env=env, capture_output=True,
                                  text=True, timeout=120)

    def test_a_layer_is_recorded_with_the_arguments_that_rebuild_it(self):
        r = self.run_layers(True)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        convs = [l for l in lines if l.startswith("ak.module:Conv2d ")]
        self.assertEqual(len(convs), 2, r.stdout)
        self.assertIn(' init=args kwargs={"bias":true,"dilation":[1,1],"groups":1,"in_channels":3,"kernel_size":[3,3],'
                      '"out_channels":8,"padding":[1,1],"padding_mode":"zeros","stride":[2,2]} train=0 args=1', convs[0])
        # Without a bias: the default would build one, so the arguments say so.
        self.assertIn('"bias":false', convs[1])
        self.assertIn('"groups":8', convs[1])
        norm = next(l for l in lines if l.startswith("ak.module:BatchNorm2d "))
        self.assertIn(" params=2 buffers=3 leaf=1 init=args kwargs={", norm)
        self.assertIn('"num_features":8', norm)
        gelu = next(l for l in lines if l.startswith("ak.module:GELU "))
        self.assertIn(' init=args kwargs={"approximate":"tanh"} train=0', gelu)
        # The container is no leaf: never rebuilt.
        self.assertIn(" leaf=0 init=untried train=0 args=1", next(l for l in lines if l.startswith("ak.module:Sequential ")))

    def test_rebuilding_a_layer_does_not_change_what_the_program_draws(self):
        hooked, plain = self.run_layers(True), self.run_layers(False)
        self.assertEqual(hooked.returncode, 0, hooked.stderr)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        draw = lambda out: next(l for l in out.splitlines() if l.startswith("next draw"))
        self.assertEqual(draw(hooked.stdout), draw(plain.stdout))

if __name__ == "__main__":
    unittest.main()
