"""A stand-in for the parts of torch the exported package's Python uses, for tests on a machine
without PyTorch: tensors that carry values, a dtype, requires_grad and a device; the switches the
replacements read (compiling, capturing, grad mode); an op namespace that records its calls; nn.SiLU,
nn.Linear and F.linear, nn.Module's global hooks; and a count of allclose calls (each a host sync on a GPU). install() puts it in sys.modules."""
import contextlib
import importlib
import math
import os
import sys
import types

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../daemon/export/package/autokernel_ops")


class DType:
    def __init__(self, name, eps):
        self.name, self.eps = name, eps

    def __repr__(self):
        return f"torch.{self.name}"


class Tensor:
    def __init__(self, values, dtype=None, requires_grad=False, ndim=1, device="cuda:0", sizes=None):
        self.values, self._ndim, self._sizes = list(values), len(sizes) if sizes else ndim, tuple(sizes or ())
        self.dtype = dtype or float16
        self.requires_grad = requires_grad
        self.device, self.is_cuda = device, device.startswith("cuda")

    @property
    def shape(self):
        """`sizes` where given (attention's [B, heads, S, D]), else one dimension of the values."""
        return self._sizes or (len(self.values),)

    @property
    def ndim(self):
        return self._ndim

    def dim(self):
        return self._ndim

    def float(self):
        return Tensor(self.values, float32)

    # What fused_mlp's replacement asks of a tensor: layout, size, identity and in-place writes.
    _version = 0

    def is_contiguous(self):
        return True

    def numel(self):
        return len(self.values)

    def data_ptr(self):
        return id(self)

    def t(self):
        return Tensor(self.values, self.dtype, self.requires_grad, self._ndim, self.device)

    def contiguous(self):
        return self

    def chunk(self, chunks, dim=-1):
        """Equal parts of the values (torch's chunk along the last dimension of these one-row tensors)."""
        n = -(-len(self.values) // chunks)
        return tuple(Tensor(self.values[i:i + n], self.dtype, self.requires_grad, self._ndim, self.device)
                     for i in range(0, len(self.values), n))

    def __mul__(self, other):
        return Tensor([a * b for a, b in zip(self.values, other.values)], self.dtype,
                      self.requires_grad or other.requires_grad, self._ndim, self.device)


float16, bfloat16 = DType("float16", 2 ** -10), DType("bfloat16", 2 ** -7)
float32, float64 = DType("float32", 2 ** -23), DType("float64", 2 ** -52)


class State:
    """What the replacements read at each call, set by a test."""
    compiling = capturing = grad = False
    allclose_calls = linear_calls = 0


class Op:
    def __init__(self, namespace, name):
        self.namespace, self.name = namespace, name
        self.default = self  # the overload the replacements bind

    def __call__(self, *args):
        self.namespace.calls.append((self.name, args))
        return self.namespace.results.get(self.name, lambda *a: Tensor([1.0, 2.0]))(*args)


class OpNamespace:
    """torch.ops.autokernel: records every call; results[name](*args) says what an op returns."""

    def __init__(self):
        self.calls, self.results = [], {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Op(self, name)


class SiLU:
    def __call__(self, x):
        return Tensor([v / (1 + math.exp(-v)) for v in x.values], x.dtype, x.requires_grad, x.ndim, x.device)


class Linear:
    """nn.Linear: y = x * weight + bias, elementwise on these one-row tensors. A call through the
    module (nn.Module.__call__) is counted apart from F.linear on its parameters."""
    module_calls = 0

    def __init__(self, weight, bias=0.0):
        self._parameters = {"weight": Tensor([weight]), "bias": None if bias is None else Tensor([bias])}
        self._forward_hooks, self._forward_pre_hooks, self._compiled_call_impl = {}, {}, None

    def __call__(self, x):
        Linear.module_calls += 1
        return linear(x, self._parameters["weight"], self._parameters["bias"])


def linear(x, weight, bias=None):
    State.linear_calls += 1
    b = bias.values[0] if bias is not None else 0.0
    return Tensor([v * weight.values[0] + b for v in x.values], x.dtype, x.requires_grad, x.ndim, x.device)


def allclose(a, b, rtol, atol):
    State.allclose_calls += 1
    return all(abs(x - y) <= atol + rtol * abs(y) for x, y in zip(a.values, b.values))


def install():
    """Makes `import torch` give the stand-in, and autokernel_ops a package whose modules import
    without building anything (its __init__, which builds the extensions, is not run)."""
    sys.dont_write_bytecode = True  # nothing written beside the package's sources
    torch = types.ModuleType("torch")
    torch.Tensor, torch.State, torch.allclose = Tensor, State, allclose
    torch.float16, torch.bfloat16, torch.float32, torch.float64 = float16, bfloat16, float32, float64
    torch.finfo = lambda dt: types.SimpleNamespace(eps=dt.eps)
    torch.empty = lambda *size, dtype=None, device="cuda:0": Tensor([], dtype, device=device)
    torch.is_grad_enabled = lambda: State.grad
    torch.no_grad = contextlib.nullcontext
    torch.compiler = types.SimpleNamespace(is_compiling=lambda: State.compiling)
    torch.cuda = types.SimpleNamespace(is_current_stream_capturing=lambda: State.capturing, current_device=lambda: 0)
    torch.ops = types.SimpleNamespace(autokernel=OpNamespace())
    # nn.Module's global hooks live in torch.nn.modules.module: dicts a test may fill.
    hooks = types.SimpleNamespace(_global_forward_hooks={}, _global_forward_pre_hooks={})
    torch.nn = types.SimpleNamespace(SiLU=SiLU, Linear=Linear, functional=types.SimpleNamespace(linear=linear),
                                     modules=types.SimpleNamespace(module=hooks))
    torch.library = types.SimpleNamespace(register_fake=lambda name: (lambda fn: fn))
    sys.modules["torch"] = torch
    package = types.ModuleType("autokernel_ops")
    package.__path__ = [PACKAGE]
    sys.modules["autokernel_ops"] = package
    for name in [m for m in sys.modules if m.startswith("autokernel_ops.")]:
        del sys.modules[name]
    return torch


def package_module(name):
    return importlib.import_module(f"autokernel_ops.{name}")
