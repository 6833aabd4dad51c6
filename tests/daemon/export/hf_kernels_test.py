"""The hf-kernels export against what the Hugging Face `kernels` library (0.17) reads, with the
library's own code: the variant name it resolves (daemon/export/package/hf/build_variant.py), the
metadata.json it parses, the digest it computes, the package it imports from a variant, and the layer
classes (daemon/export/package/hf/layers.py) against its rules for a layer. No GPU and no compiler:
the variant here holds a stand-in package; the built one is checked on the GPU machine
(tests/gpu/gpu-models.sh hf-kernels). Run by ctest with the Python of the virtual environment
scripts/install-deps.sh makes (kernels 0.17, the system's PyTorch): python -m unittest hf_kernels_test.py"""
import importlib.util
import inspect
import json
import os
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "..", "..", "daemon", "export", "package")

try:
    import kernels  # noqa: F401
    from kernels._rust import Digest, DigestAlgorithm, Metadata
    from kernels.importer import _import_from_path
    from kernels.resolver import resolve_local_kernel
    from kernels.variants import ArchVariant, _resolve_variant_for_system, parse_variant
    from kernels.backends import CUDA
    from packaging.version import Version
except ImportError as e:
    kernels = None
    WHY = f"SKIPPED: no kernels library ({e}): scripts/install-deps.sh installs it in a virtual environment"

try:
    import torch
except ImportError:
    torch = None


def setUpModule():
    if kernels is None:
        raise unittest.SkipTest(WHY)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


B = load(os.path.join(PACKAGE, "hf", "build_variant.py"), "build_variant")
NS = "_autokernel_0123456789abcdef"


class VariantName(unittest.TestCase):
    def resolve(self, name, torch_version="2.11", cuda="13.0", abi=True):
        accepted, trace = _resolve_variant_for_system([parse_variant(name)], CUDA(version=Version(cuda)), "x86_64",
                                                      "linux", Version(torch_version), abi, None)
        return accepted, trace

    def test_the_name_is_one_the_library_parses_back_to_the_same_torch_cuda_abi_and_platform(self):
        name = B.variant_name("2.11.0+cu130", "13.0", True, "x86_64", "linux")
        self.assertEqual(name, "torch211-cxx11-cu130-x86_64-linux")
        v = parse_variant(name)
        self.assertIsInstance(v, ArchVariant)
        self.assertEqual(v.variant_str, name)

    def test_the_library_accepts_it_on_the_system_it_was_built_for(self):
        accepted, trace = self.resolve(B.variant_name("2.11.0+cu130", "13.0", True, "x86_64", "linux"))
        self.assertEqual(len(accepted), 1, trace)

    def test_the_library_rejects_it_for_another_torch_another_abi_or_a_newer_cuda(self):
        name = B.variant_name("2.11.0+cu130", "13.0", True, "x86_64", "linux")
        self.assertEqual(self.resolve(name, torch_version="2.10")[0], [])
        self.assertEqual(self.resolve(name, abi=False)[0], [])
        self.assertEqual(self.resolve(B.variant_name("2.11.0", "13.2", True, "x86_64", "linux"))[0], [])
        # An older CUDA minor of the same major runs on a newer runtime, as the library allows.
        self.assertEqual(len(self.resolve(name, cuda="13.2")[0]), 1)

    def test_two_digit_minors_and_other_platforms_keep_their_parts(self):
        self.assertEqual(B.variant_name("2.15.0.dev20260101", "12.8", False, "aarch64", "linux"),
                         "torch215-cxx98-cu128-aarch64-linux")
        self.assertEqual(parse_variant(B.variant_name("2.10.1", "12.6", True, "arm64", "linux")).arch.platform, "aarch64")


class MetadataJson(unittest.TestCase):
    def test_the_library_parses_it_with_the_namespace_as_id_and_the_package_as_python_name(self):
        m = Metadata.from_bytes(json.dumps(B.metadata(NS, ["sm_90a", "sm_90a", "sm_80"], {})).encode())
        self.assertEqual(m.id, NS)
        self.assertEqual(m.name.python_name, "autokernel_ops")
        self.assertEqual(str(m.backend.backend_type), str(m.backend.backend_type.CUDA))
        self.assertEqual(m.backend.archs, ["8.0", "9.0a"])
        self.assertEqual(m.python_depends, [])
        self.assertEqual(str(m.kernels_minver), B.KERNELS_MINVER)

    def test_capabilities_are_the_librarys_form_of_the_nvrtc_targets(self):
        self.assertEqual([B.capability(a) for a in ("sm_90a", "sm_100f", "sm_89", "compute_90")], ["9.0a", "10.0f", "8.9", "9.0"])

    def test_the_digest_is_the_one_the_library_computes_and_validates(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "autokernel_ops", "__pycache__"))
            Path(d, "autokernel_ops", "__init__.py").write_text("x = 1\n")
            Path(d, "autokernel_ops", "lib.so").write_bytes(bytes(range(256)))
            Path(d, "autokernel_ops", "__pycache__", "x.pyc").write_bytes(b"bytecode")
            Path(d, "metadata.json").write_text(json.dumps(B.metadata(NS, ["sm_90a"], B.digest(d))))
            written = Metadata.read_from_file(os.path.join(d, "metadata.json")).digest
            self.assertEqual(sorted(written.files), ["autokernel_ops/__init__.py", "autokernel_ops/lib.so"])
            written.validate(Digest.hash_variant(DigestAlgorithm.SHA256, d))  # raises on a mismatch
            Path(d, "autokernel_ops", "lib.so").write_bytes(b"changed")
            with self.assertRaises(Exception):
                written.validate(Digest.hash_variant(DigestAlgorithm.SHA256, d))


STAND_IN = '''"""A stand-in for the built package: what the library needs of it."""
from . import layers
NAME = __name__
'''


@unittest.skipIf(torch is None or torch.version.cuda is None, "SKIPPED: no CUDA build of PyTorch (the library resolves "
                 "variants against it)")
class Loading(unittest.TestCase):
    def variant(self, repo, name):
        target = os.path.join(repo, "build", name)
        os.makedirs(os.path.join(target, "autokernel_ops"))
        Path(target, "autokernel_ops", "__init__.py").write_text(STAND_IN)
        Path(target, "autokernel_ops", "layers.py").write_text("class RMSNorm:\n    pass\n")
        Path(target, "metadata.json").write_text(json.dumps(B.metadata(NS, ["sm_90a"], B.digest(target))))
        return target

    def test_the_library_resolves_this_machines_variant_and_imports_its_package_under_the_namespace(self):
        with tempfile.TemporaryDirectory() as repo:
            target = self.variant(repo, B.this_variant(torch))
            self.variant(repo, B.variant_name("1.13", "11.8", True, "x86_64", "linux"))  # another torch's: passed over
            found = resolve_local_kernel(Path(repo), backend="cuda")
            self.assertEqual(found.variant_path, Path(target))
            module = _import_from_path(found.variant_path, {})
            self.assertEqual(module.NAME, NS)
            self.assertIs(sys.modules[NS], module)
            self.assertTrue(hasattr(module.layers, "RMSNorm"))


NO_OPS = "DIRECT, LOADED, SHAPES, VERSIONS = {}, [], {}, {}\n"
# A package whose swiglu loaded, of contract version {version}: the op records each call (the
# registered op, and the direct function that eager calls take) and computes silu(gate) * up.
SWIGLU_OPS = """import types
import torch
CALLS = []


def _recording(kind):
    def swiglu(gate, up):
        CALLS.append((kind, gate, up))
        return torch.nn.functional.silu(gate) * up
    return swiglu


ops = types.SimpleNamespace(swiglu=types.SimpleNamespace(default=_recording("registered")))
"""
SWIGLU_LOADED = """from ._ops import _recording
DIRECT, LOADED, SHAPES, VERSIONS = {{"swiglu": _recording("direct")}}, ["swiglu"], {{}}, {{"swiglu": {version}}}
"""


def layers_module(name="ak_layers_pkg", init=NO_OPS, ops="ops = None\n"):
    """layers.py in a package `name`, by default one whose ops did not load (no GPU): every layer
    runs PyTorch's math."""
    d = tempfile.mkdtemp()
    unittest.addModuleCleanup(shutil.rmtree, d, ignore_errors=True)
    pkg = os.path.join(d, name)
    os.makedirs(pkg)
    Path(pkg, "__init__.py").write_text(init)
    Path(pkg, "_ops.py").write_text(ops)
    for f in ("_replacements.py",):
        Path(pkg, f).write_text(Path(PACKAGE, "autokernel_ops", f).read_text())
    Path(pkg, "layers.py").write_text(Path(PACKAGE, "hf", "layers.py").read_text())
    sys.path.insert(0, d)
    return importlib.import_module(f"{name}.layers")


@unittest.skipIf(torch is None, "SKIPPED: no PyTorch")
class Layers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from kernels.layer.layer import _validate_layer
        cls.L, cls.validate = layers_module(), staticmethod(_validate_layer)
        nn = torch.nn

        class Qwen3RMSNorm(nn.Module):  # transformers' forward, as a stand-in of the class kernelize replaces
            def __init__(self, hidden, eps=1e-6):
                super().__init__()
                self.weight, self.variance_epsilon = nn.Parameter(torch.randn(hidden)), eps

            def forward(self, hidden_states):
                h = hidden_states.to(torch.float32)
                h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
                return self.weight * h.to(hidden_states.dtype)

        class Qwen3MLP(nn.Module):
            def __init__(self, hidden, inter):
                super().__init__()
                self.gate_proj = nn.Linear(hidden, inter, bias=False)
                self.up_proj = nn.Linear(hidden, inter, bias=False)
                self.down_proj = nn.Linear(inter, hidden, bias=False)
                self.act_fn = nn.SiLU()

            def forward(self, x):
                return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))

        class Phi3MLP(nn.Module):
            def __init__(self, hidden, inter, act=None):
                super().__init__()
                self.gate_up_proj = nn.Linear(hidden, 2 * inter, bias=False)
                self.down_proj = nn.Linear(inter, hidden, bias=False)
                self.activation_fn = nn.SiLU() if act is None else act

            def forward(self, hidden_states):
                up_states = self.gate_up_proj(hidden_states)
                gate, up_states = up_states.chunk(2, dim=-1)
                up_states = up_states * self.activation_fn(gate)
                return self.down_proj(up_states)

        class Qwen3RotaryEmbedding(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)))
                self.rope_type, self.attention_scaling = "default", 1.0

            def forward(self, x, position_ids):
                freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
                emb = torch.cat((freqs, freqs), dim=-1)
                return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

        def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
            return cls.L.rotary_math(q, k, cos, sin, unsqueeze_dim)

        from kernels import use_kernel_forward_from_hub
        cls.norm, cls.mlp, cls.tables = Qwen3RMSNorm(64), Qwen3MLP(64, 96), Qwen3RotaryEmbedding(16)
        cls.Phi3MLP, cls.Qwen3MLP, cls.Qwen3RMSNorm = Phi3MLP, Qwen3MLP, Qwen3RMSNorm
        cls.Qwen3RotaryEmbedding, cls.phi3_mlp = Qwen3RotaryEmbedding, Phi3MLP(64, 96)
        cls.rotary_func = use_kernel_forward_from_hub("rotary_pos_emb")(apply_rotary_pos_emb)

    def test_each_layer_passes_the_librarys_rules_against_the_module_it_replaces(self):
        for layer, module in ((self.L.RMSNorm, self.norm), (self.L.GatedMLP, self.mlp), (self.L.GateUpMLP, self.phi3_mlp),
                              (self.L.RotaryEmbedding, self.tables), (self.L.RotaryPosEmb, self.rotary_func)):
            with self.subTest(layer=layer.__name__):
                self.validate(check_cls=type(module), cls=layer, repo="autokernel_ops")
                self.assertTrue(layer.can_torch_compile)
                self.assertFalse(layer.has_backward)  # forward only: training keeps the model's forward

    def test_a_layer_with_a_member_of_its_own_would_be_refused(self):
        class WithHelper(self.L.RMSNorm):
            def helper(self):
                return 1
        with self.assertRaises(TypeError):
            self.validate(check_cls=type(self.norm), cls=WithHelper, repo="autokernel_ops")

    def test_forward_signatures_name_what_transformers_passes(self):
        self.assertEqual(list(inspect.signature(self.L.RotaryPosEmb.forward).parameters),
                         ["self", "q", "k", "cos", "sin", "unsqueeze_dim"])
        self.assertEqual(list(inspect.signature(self.L.RMSNorm.forward).parameters), ["self", "hidden_states"])
        self.assertEqual(list(inspect.signature(self.L.GateUpMLP.forward).parameters), ["self", "hidden_states"])
        self.assertEqual(list(inspect.signature(self.L.RotaryEmbedding.forward).parameters), ["self", "x", "position_ids"])

    def test_without_the_ops_each_layer_computes_what_the_module_computes(self):
        from types import MethodType
        x = torch.randn(2, 5, 64)
        for module, layer in ((self.norm, self.L.RMSNorm), (self.mlp, self.L.GatedMLP), (self.phi3_mlp, self.L.GateUpMLP)):
            with self.subTest(layer=layer.__name__), torch.no_grad():
                torch.testing.assert_close(MethodType(layer.forward, module)(x), module.forward(x))
        with torch.no_grad():
            x, positions = torch.randn(2, 5, 64), torch.arange(5)[None].expand(2, 5)
            torch.testing.assert_close(MethodType(self.L.RotaryEmbedding.forward, self.tables)(x, positions),
                                       self.tables.forward(x, positions))
        q, k = torch.randn(2, 4, 5, 16), torch.randn(2, 2, 5, 16)
        cos, sin = torch.randn(2, 5, 16), torch.randn(2, 5, 16)
        mine = MethodType(self.L.RotaryPosEmb.forward, self.rotary_func)(q, k, cos, sin)
        half = lambda t: torch.cat((-t[..., 8:], t[..., :8]), dim=-1)  # noqa: E731
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        torch.testing.assert_close(mine, (q * c + half(q) * s, k * c + half(k) * s))


    def test_the_layer_mapping_names_GateUpMLP_for_Phi3MLP_and_GatedMLP_for_the_other_mlps(self):
        class Phi3LikeMLP(self.Phi3MLP):  # a model's subclass of Phi3MLP keeps its form
            pass
        # transformers writes GLM's MLPs out in full, of Phi3MLP's form but not derived from it.
        GlmMLP = type("GlmMLP", (torch.nn.Module,), {})
        Glm4MLP = type("Glm4MLP", (torch.nn.Module,), {})
        name = self.L.layer_name
        self.assertEqual([name(c) for c in (self.Phi3MLP, Phi3LikeMLP, GlmMLP, Glm4MLP, self.Qwen3MLP, self.Qwen3RMSNorm,
                                            self.Qwen3RotaryEmbedding, torch.nn.Linear)],
                         ["GateUpMLP", "GateUpMLP", "GateUpMLP", "GateUpMLP", "GatedMLP", "RMSNorm", "RotaryEmbedding", None])
        self.assertEqual(self.L.LAYER_NAMES["GateUpMLP"], "GateUpMLP")
        for layer_name, cls in self.L.LAYER_NAMES.items():  # each names a layer class of the module
            with self.subTest(layer_name=layer_name):
                self.assertTrue(issubclass(getattr(self.L, cls), torch.nn.Module))


@unittest.skipIf(torch is None, "SKIPPED: no PyTorch")
class GateUpLayer(unittest.TestCase):
    """GateUpMLP in a package whose swiglu loaded (a recording stand-in of the op): the op on the
    halves of gate_up_proj's output, or transformers' Phi3MLP math where the op cannot serve."""

    @classmethod
    def setUpClass(cls):
        cls.v2 = layers_module("ak_layers_swiglu2", SWIGLU_LOADED.format(version=2), SWIGLU_OPS)
        cls.v1 = layers_module("ak_layers_swiglu1", SWIGLU_LOADED.format(version=1), SWIGLU_OPS)
        if not hasattr(Layers, "L"):  # the stand-ins of transformers' classes, and the package without ops
            Layers.setUpClass()
        cls.Phi3MLP = Layers.Phi3MLP

    def setUp(self):
        for layers in (self.v1, self.v2):
            sys.modules[layers.__package__ + "._ops"].CALLS.clear()

    def calls(self, layers):
        return sys.modules[layers.__package__ + "._ops"].CALLS

    def run_layer(self, layers, mlp, x):
        from types import MethodType
        return MethodType(layers.GateUpMLP.forward, mlp)(x)

    def test_the_op_gets_gate_and_up_as_the_two_halves_of_one_projection_where_they_lie(self):
        mlp, x = self.Phi3MLP(64, 96), torch.randn(2, 5, 64)
        with torch.no_grad():
            mine, theirs = self.run_layer(self.v2, mlp, x), mlp(x)
        torch.testing.assert_close(mine, theirs)
        self.assertEqual(len(self.calls(self.v2)), 1)
        kind, gate, up = self.calls(self.v2)[0]
        self.assertEqual(kind, "direct")  # an eager call: the op without the dispatcher
        self.assertIsNotNone(gate._base)
        self.assertIs(gate._base, up._base)  # views of one tensor, no copy
        self.assertEqual(gate._base.shape, (2, 5, 192))
        self.assertEqual((gate.shape, gate.stride()), ((2, 5, 96), (960, 192, 1)))
        self.assertEqual(up.data_ptr() - gate.data_ptr(), 96 * gate.element_size())
        with torch.no_grad():
            h = mlp.gate_up_proj(x)
        torch.testing.assert_close(gate, h[..., :96])
        torch.testing.assert_close(up, h[..., 96:])

    def test_transformers_own_silu_class_takes_the_op(self):
        class SiLUActivation(torch.nn.Module):
            def forward(self, x):
                return torch.nn.functional.silu(x)
        SiLUActivation.__module__ = "transformers.activations"
        mlp, x = self.Phi3MLP(64, 96, SiLUActivation()), torch.randn(3, 64)
        with torch.no_grad():
            torch.testing.assert_close(self.run_layer(self.v2, mlp, x), mlp(x))
        self.assertEqual(len(self.calls(self.v2)), 1)

    def assert_math(self, layers, mlp, x, grad=False):
        """The layer's result is the module's own, without an op call."""
        with torch.set_grad_enabled(grad):
            mine, theirs = self.run_layer(layers, mlp, x), mlp(x)
        torch.testing.assert_close(mine, theirs)
        self.assertEqual(self.calls(layers), [])
        return mine

    def test_a_call_that_needs_gradients_runs_the_math_and_trains(self):
        mlp = self.Phi3MLP(64, 96)
        x = torch.randn(2, 5, 64, requires_grad=True)
        self.assert_math(self.v2, mlp, x, grad=True).sum().backward()
        self.assertIsNotNone(x.grad)
        # x needs none, the projection's weight does: the op has no backward either.
        mlp.zero_grad()
        self.assert_math(self.v2, mlp, torch.randn(2, 5, 64), grad=True).sum().backward()
        self.assertIsNotNone(mlp.gate_up_proj.weight.grad)

    def test_swiglu_of_contract_version_1_which_reads_dense_operands_only_runs_the_math(self):
        self.assert_math(self.v1, self.Phi3MLP(64, 96), torch.randn(2, 5, 64))

    def test_an_activation_other_than_silu_runs_the_math_with_it(self):
        self.assert_math(self.v2, self.Phi3MLP(64, 96, torch.nn.GELU()), torch.randn(2, 5, 64))

    def test_an_input_of_another_dtype_than_the_projection_runs_the_math_as_autocast_makes_it(self):
        mlp, x = self.Phi3MLP(64, 96), torch.randn(2, 5, 64).to(torch.bfloat16)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            self.assert_math(self.v2, mlp, x)

    def test_without_the_op_the_layer_runs_the_math(self):
        mlp, x = self.Phi3MLP(64, 96), torch.randn(2, 5, 64)
        with torch.no_grad():
            torch.testing.assert_close(self.run_layer(Layers.L, mlp, x), mlp(x))

    def test_an_mlp_without_gate_up_proj_is_refused_naming_the_layer_it_takes(self):
        with self.assertRaisesRegex(TypeError, "GatedMLP"):
            with torch.no_grad():
                self.run_layer(self.v2, Layers.mlp, torch.randn(2, 64))
        self.assertEqual(self.calls(self.v2), [])

@unittest.skipIf(torch is None or torch.version.cuda is None, "SKIPPED: no CUDA build of PyTorch (the library resolves "
                 "variants against it)")
class Kernelize(unittest.TestCase):
    """The library's kernelize on a model with a Phi3MLP and a Qwen3MLP, the classes given their
    layer names by the export's mapping (layer_name, LAYER_NAMES), from a variant whose package is
    layers.py beside a recording swiglu of contract version 2. kernelize asks the GPU's capability
    to pick a repository by it: this machine has none, so the library is told an sm_90 one."""

    def test_kernelize_swaps_GateUpMLP_into_Phi3MLP_and_its_forward_calls_the_op_on_the_halves(self):
        from unittest import mock
        from kernels import LocalLayerRepository, Mode, get_local_kernel, kernelize, replace_kernel_forward_from_hub
        from kernels import use_kernel_mapping
        namespace = "_autokernel_fedcba9876543210"  # not the Loading test's: a package of its own
        repo = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, repo, ignore_errors=True)
        target = os.path.join(repo, "build", B.this_variant(torch))
        pkg = os.path.join(target, "autokernel_ops")
        os.makedirs(pkg)
        Path(pkg, "__init__.py").write_text(SWIGLU_LOADED.format(version=2) + "from . import layers\n")
        Path(pkg, "_ops.py").write_text(SWIGLU_OPS)
        Path(pkg, "_replacements.py").write_text(Path(PACKAGE, "autokernel_ops", "_replacements.py").read_text())
        Path(pkg, "layers.py").write_text(Path(PACKAGE, "hf", "layers.py").read_text())
        Path(target, "metadata.json").write_text(json.dumps(B.metadata(namespace, ["sm_90a"], B.digest(target))))
        if not hasattr(Layers, "L"):
            Layers.setUpClass()

        class Phi3MLP(Layers.Phi3MLP):  # classes of this test's own: kernelize marks them
            pass

        class Qwen3MLP(Layers.Qwen3MLP):
            pass

        model = torch.nn.Sequential(Phi3MLP(64, 96), Qwen3MLP(64, 96))
        layers = get_local_kernel(Path(repo)).layers
        for cls in (Phi3MLP, Qwen3MLP):
            replace_kernel_forward_from_hub(cls, layers.layer_name(cls))
        mapping = {name: {"cuda": LocalLayerRepository(Path(repo), layer_name=layer)}
                   for name, layer in layers.LAYER_NAMES.items()}
        with mock.patch("kernels.layer.repos._find_capability", return_value=90), use_kernel_mapping(mapping):
            kernelize(model, mode=Mode.INFERENCE, device="cuda", use_fallback=False)
        self.assertIs(model[0].forward.__func__, layers.GateUpMLP.forward)
        self.assertIs(model[1].forward.__func__, layers.GatedMLP.forward)
        calls = sys.modules[namespace + "._ops"].CALLS
        x = torch.randn(3, 64)
        with torch.no_grad():
            torch.testing.assert_close(model[0](x), Layers.Phi3MLP.forward(model[0], x))
        self.assertEqual(len(calls), 1)
        _, gate, up = calls[0]
        self.assertIs(gate._base, up._base)
        self.assertEqual(gate._base.shape, (3, 192))

if __name__ == "__main__":
    unittest.main()
