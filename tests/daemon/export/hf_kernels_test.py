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


def layers_module():
    """layers.py in a package whose ops did not load (no GPU): every layer runs PyTorch's math."""
    d = tempfile.mkdtemp()
    unittest.addModuleCleanup(shutil.rmtree, d, ignore_errors=True)
    pkg = os.path.join(d, "ak_layers_pkg")
    os.makedirs(pkg)
    Path(pkg, "__init__.py").write_text("DIRECT, LOADED, SHAPES, VERSIONS = {}, [], {}, {}\n")
    Path(pkg, "_ops.py").write_text("ops = None\n")
    for f in ("_replacements.py",):
        Path(pkg, f).write_text(Path(PACKAGE, "autokernel_ops", f).read_text())
    Path(pkg, "layers.py").write_text(Path(PACKAGE, "hf", "layers.py").read_text())
    sys.path.insert(0, d)
    import ak_layers_pkg.layers as layers
    return layers


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
        cls.rotary_func = use_kernel_forward_from_hub("rotary_pos_emb")(apply_rotary_pos_emb)

    def test_each_layer_passes_the_librarys_rules_against_the_module_it_replaces(self):
        for layer, module in ((self.L.RMSNorm, self.norm), (self.L.GatedMLP, self.mlp),
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
        self.assertEqual(list(inspect.signature(self.L.RotaryEmbedding.forward).parameters), ["self", "x", "position_ids"])

    def test_without_the_ops_each_layer_computes_what_the_module_computes(self):
        from types import MethodType
        x = torch.randn(2, 5, 64)
        for module, layer in ((self.norm, self.L.RMSNorm), (self.mlp, self.L.GatedMLP)):
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


if __name__ == "__main__":
    unittest.main()
