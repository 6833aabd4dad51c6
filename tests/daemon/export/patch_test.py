"""The patch logic of the exported package (daemon/export/package/autokernel_ops/_patch.py), on
stand-in modules: which attributes it replaces, that it puts them back, that it never stacks.
Run by ctest: python3 -m unittest tests/daemon/export/patch_test.py"""
import importlib.util
import os
import types
import unittest

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "ak_patch", os.path.join(_HERE, "../../../daemon/export/package/autokernel_ops/_patch.py"))
_patch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_patch)




def module(name, **attrs):
    m = types.ModuleType(name)
    for k, v in attrs.items():
        if isinstance(v, type):
            v.__module__ = name
        setattr(m, k, v)
    return m


def fresh_modules():
    """torch, torch.nn.functional, a transformers model module and an unrelated one."""
    class LlamaRMSNorm:
        def forward(self, x):
            return "llama"

    class GPT2Block:  # not a norm: left alone
        def forward(self, x):
            return "block"

    class DerivedRMSNorm(LlamaRMSNorm):  # inherits forward: patched where it is defined
        pass

    def apply_rotary_pos_emb(q, k, cos, sin):
        return "rope"

    class LlamaRotaryEmbedding:  # the step's cos and sin tables
        def forward(self, x, position_ids):
            return "tables"

    class LlamaMLP:  # gated: its replacement tells on the first call
        def forward(self, x):
            return "mlp"

    class LlamaMLPBlock:  # the suffix must end the name
        def forward(self, x):
            return "block"

    F = module("torch.nn.functional", rms_norm=lambda *a: "F.rms_norm", softmax=lambda *a: "F.softmax",
               layer_norm=lambda *a: "F.layer_norm", cross_entropy=lambda *a: "F.cross_entropy")
    torch = module("torch", softmax=lambda *a: "torch.softmax")
    llama = module("transformers.models.llama.modeling_llama", LlamaRMSNorm=LlamaRMSNorm, GPT2Block=GPT2Block,
                   DerivedRMSNorm=DerivedRMSNorm, apply_rotary_pos_emb=apply_rotary_pos_emb,
                   LlamaRotaryEmbedding=LlamaRotaryEmbedding, LlamaMLP=LlamaMLP, LlamaMLPBlock=LlamaMLPBlock)
    # A module that imports LlamaRMSNorm: the class is patched once, where it is defined.
    mistral = module("transformers.models.mistral.modeling_mistral")
    mistral.LlamaRMSNorm = LlamaRMSNorm
    other = module("mylib.layers", MyRMSNorm=type("MyRMSNorm", (), {"forward": lambda self, x: "mine"}),
                   MyMLP=type("MyMLP", (), {"forward": lambda self, x: "mine"}))
    # The program's own model, and transformers' GPT-2, whose MLP is not gated (c_fc, c_proj): a
    # target all the same, the instance decides.
    main = module("__main__", TinyMLP=type("TinyMLP", (), {"forward": lambda self, x: "tiny"}))
    gpt2 = module("transformers.models.gpt2.modeling_gpt2", GPT2MLP=type("GPT2MLP", (), {"forward": lambda self, x: "gpt2"}))
    return {"torch": torch, "torch.nn.functional": F, llama.__name__: llama, mistral.__name__: mistral,
            other.__name__: other, main.__name__: main, gpt2.__name__: gpt2}


def tagged(target, original):
    def replacement(*args, **kwargs):
        return "autokernel:" + target.type
    return replacement


class FindTargets(unittest.TestCase):
    def test_only_the_types_that_were_exported_are_targets(self):
        names = sorted(t.name for t in _patch.find_targets(fresh_modules(), {"rmsnorm"}))
        self.assertEqual(names, ["torch.nn.functional.rms_norm",
                                 "transformers.models.llama.modeling_llama.LlamaRMSNorm.forward"])

    def test_softmax_is_patched_in_torch_and_in_functional(self):
        names = sorted(t.name for t in _patch.find_targets(fresh_modules(), {"softmax"}))
        self.assertEqual(names, ["torch.nn.functional.softmax", "torch.softmax"])

    def test_the_rotary_helper_is_found_in_model_modules_only(self):
        mods = fresh_modules()
        mods["mylib.rope"] = module("mylib.rope", apply_rotary_pos_emb=lambda *a: None)
        targets = _patch.find_targets(mods, {"rotary_embedding"})
        self.assertEqual([t.name for t in targets if t.kind == "function"],
                         ["transformers.models.llama.modeling_llama.apply_rotary_pos_emb"])

    def test_a_rotary_embedding_class_is_a_target_of_the_rotary_type_for_its_tables(self):
        targets = _patch.find_targets(fresh_modules(), {"rotary_embedding"})
        self.assertEqual([(t.name, t.kind) for t in targets if t.kind == "class"],
                         [("transformers.models.llama.modeling_llama.LlamaRotaryEmbedding.forward", "class")])
        self.assertEqual([t.op for t in targets], ["rotary_tables", "rotary_embedding"])
        self.assertEqual([t.name for t in _patch.find_targets(fresh_modules(), {"rmsnorm"}) if "Rotary" in t.name], [])

    def test_an_mlp_class_of_a_model_module_or_the_program_is_a_swiglu_target(self):
        targets = _patch.find_targets(fresh_modules(), {"swiglu"})
        self.assertEqual([(t.name, t.kind, t.op) for t in targets],
                         [("__main__.TinyMLP.forward", "class", "swiglu"),
                          ("transformers.models.gpt2.modeling_gpt2.GPT2MLP.forward", "class", "swiglu"),
                          ("transformers.models.llama.modeling_llama.LlamaMLP.forward", "class", "swiglu")])
        self.assertEqual([t.name for t in _patch.find_targets(fresh_modules(), {"rmsnorm", "rotary_embedding"})
                          if "MLP" in t.name], [])

    def test_with_fused_mlp_exported_an_mlp_class_is_one_target_of_it_that_also_calls_swiglu(self):
        targets = [t for t in _patch.find_targets(fresh_modules(), {"swiglu", "fused_mlp"}) if t.kind == "class"]
        self.assertEqual([(t.name, t.type, t.types) for t in targets if t.name.endswith("LlamaMLP.forward")],
                         [("transformers.models.llama.modeling_llama.LlamaMLP.forward", "fused_mlp", ("fused_mlp", "swiglu"))])
        self.assertEqual(len(targets), 3)   # one a class: never patched twice

    def test_linear_and_sdpa_are_targets_of_matmul_and_flash_attention(self):
        mods = fresh_modules()
        mods["torch.nn.functional"].linear = lambda *a: None
        mods["torch.nn.functional"].scaled_dot_product_attention = lambda *a: None
        names = sorted((t.name, t.type) for t in _patch.find_targets(mods, {"matmul", "flash_attention"}))
        self.assertEqual(names, [("torch.nn.functional.linear", "matmul"),
                                 ("torch.nn.functional.scaled_dot_product_attention", "flash_attention")])

    def test_a_module_named_in_also_is_searched_like_a_model_module(self):
        names = [t.name for t in _patch.find_targets(fresh_modules(), {"rmsnorm"}, also=("mylib.layers",))]
        self.assertIn("mylib.layers.MyRMSNorm.forward", names)

    def test_nothing_is_a_target_when_no_op_was_built(self):
        self.assertEqual(_patch.find_targets(fresh_modules(), set()), [])


class ApplyAndRestore(unittest.TestCase):
    def test_a_with_block_replaces_and_then_restores_every_attribute(self):
        mods = fresh_modules()
        F, llama = mods["torch.nn.functional"], mods["transformers.models.llama.modeling_llama"]
        original_rms, original_forward = F.rms_norm, llama.LlamaRMSNorm.forward
        with _patch.Patches().apply(_patch.find_targets(mods, {"rmsnorm", "rotary_embedding"}), tagged) as p:
            self.assertEqual(F.rms_norm(None), "autokernel:rmsnorm")
            self.assertEqual(llama.LlamaRMSNorm().forward(None), "autokernel:rmsnorm")
            self.assertEqual(llama.apply_rotary_pos_emb(1, 2, 3, 4), "autokernel:rotary_embedding")
            self.assertEqual(llama.GPT2Block().forward(None), "block")
            self.assertEqual(llama.LlamaRotaryEmbedding().forward(None, None), "autokernel:rotary_embedding")
            self.assertEqual(llama.LlamaMLP().forward(None), "mlp")  # no swiglu op exported
            self.assertIn("torch.nn.functional.rms_norm -> autokernel::rmsnorm", p.names)
            self.assertEqual(len(p.names), 4)
        with _patch.Patches().apply(_patch.find_targets(mods, {"swiglu"}), tagged) as p:
            self.assertEqual(llama.LlamaMLP().forward(None), "autokernel:swiglu")
            self.assertEqual(llama.LlamaMLPBlock().forward(None), "block")
            self.assertIn("transformers.models.llama.modeling_llama.LlamaMLP.forward -> autokernel::swiglu", p.names)
        self.assertEqual(llama.LlamaMLP().forward(None), "mlp")
        self.assertIs(F.rms_norm, original_rms)
        self.assertIs(llama.LlamaRMSNorm.forward, original_forward)
        self.assertEqual(llama.apply_rotary_pos_emb(1, 2, 3, 4), "rope")

    def test_patching_twice_does_not_stack_and_restoring_the_second_leaves_the_first(self):
        mods = fresh_modules()
        F = mods["torch.nn.functional"]
        original = F.rms_norm
        first = _patch.Patches().apply(_patch.find_targets(mods, {"rmsnorm"}), tagged)
        second = _patch.Patches().apply(_patch.find_targets(mods, {"rmsnorm"}), tagged)
        self.assertEqual(second.names, [])
        second.restore()
        self.assertEqual(F.rms_norm(None), "autokernel:rmsnorm")
        self.assertIs(getattr(F.rms_norm, _patch.Patches.MARK), original)
        first.restore()
        self.assertIs(F.rms_norm, original)


class Unpatched(unittest.TestCase):
    """verify.py times eager PyTorch inside the patched block: the originals back for a while, then
    the very same replacements (checked already) again."""

    def test_the_originals_run_inside_and_the_same_replacements_after(self):
        import fake_torch
        fake_torch.install()
        verify = fake_torch.package_module("verify")
        mods = fresh_modules()
        F, llama = mods["torch.nn.functional"], mods["transformers.models.llama.modeling_llama"]
        original_rms = F.rms_norm
        with _patch.Patches().apply(_patch.find_targets(mods, {"rmsnorm", "rotary_embedding"}), tagged) as p:
            replacement = F.rms_norm
            with verify.unpatched(p):
                self.assertIs(F.rms_norm, original_rms)
                self.assertEqual(llama.apply_rotary_pos_emb(1, 2, 3, 4), "rope")
            self.assertIs(F.rms_norm, replacement)
            self.assertEqual(llama.apply_rotary_pos_emb(1, 2, 3, 4), "autokernel:rotary_embedding")
        self.assertIs(F.rms_norm, original_rms)


if __name__ == "__main__":
    unittest.main()
