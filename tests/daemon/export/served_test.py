"""Which calls the ops served, and by which exported file (daemon/export/package/autokernel_ops/
_served.py), on a stand-in torch: a call the replacement declines in Python, one the op hands to
PyTorch inside its C++ (no launch counted), one a file served; shares per type; the file names
from manifests with and without "files". Run by ctest: python3 -m unittest served_test.py"""
import unittest

import fake_torch

torch = fake_torch.install()
S = fake_torch.package_module("_served")
P = fake_torch.package_module("_patch")


def target(type_, kind="functional", name="torch.nn.functional.rms_norm"):
    owner_name, attr = name.rsplit(".", 1)
    return P.Target(None, owner_name, attr, type_, kind)


class Launches:
    """The ops' <type>_launches(): counts a test advances as the 'kernel' runs."""

    def __init__(self, files):
        self.counts = {t: [0] * n for t, n in files.items()}

    def __call__(self, type_):
        return list(self.counts[type_])


def replacement_maker(launches, file_of):
    """make(target, original): a replacement that declines a call whose first argument is 'decline'
    (calls the original), lets the op fall back on 'fallback' (no launch), and otherwise launches
    the file file_of(argument) of the target's type."""
    def make(t, original):
        def replacement(x):
            if x == "decline":
                return original(x)
            if x != "fallback":
                launches.counts[t.type][file_of(x)] += 1
            return "op"
        return replacement
    return make


class Serving(unittest.TestCase):
    def setUp(self):
        self.launches = Launches({"rmsnorm": 2, "rotary_embedding": 1})
        self.rows, self.armed = {}, [False]
        make = replacement_maker(self.launches, lambda x: 1 if x == "short rows" else 0)
        self.wrap = S.serving_wrapper(make, self.launches, self.rows, self.armed)

    def test_each_call_is_counted_as_served_by_its_file_declined_in_python_or_fallen_back_in_the_op(self):
        t = target("rmsnorm")
        call = self.wrap(t, None, lambda x: "original")
        call("long rows")   # the unarmed first step: not counted
        self.armed[0] = True
        results = [call(x) for x in ("long rows", "short rows", "short rows", "decline", "fallback")]
        self.assertEqual(results, ["op", "op", "op", "original", "op"])
        row = self.rows[t.name].row(lambda type_, i: f"{type_}-{i}")
        self.assertEqual((row["calls"], row["served"], row["declined"], row["op_fell_back"]), (5, 3, 1, 1))
        self.assertAlmostEqual(row["share"], 0.6)
        self.assertEqual(row["files"], {"rmsnorm-0": 1, "rmsnorm-1": 2})

    def test_a_rotary_class_served_by_the_tables_op_counts_every_call_it_does_not_decline(self):
        t = target("rotary_embedding", "class", "m.LlamaRotaryEmbedding.forward")
        self.assertEqual(t.op, "rotary_tables")
        make = lambda t, original: (lambda x: original(x) if x == "decline" else "tables")
        call = S.serving_wrapper(make, self.launches, self.rows, [True])(t, None, lambda x: "original")
        for x in ("a", "b", "decline"):
            call(x)
        row = self.rows[t.name].row(lambda type_, i: str(i))
        self.assertEqual((row["calls"], row["served"], row["declined"], row["files"]), (3, 2, 1, {}))

    def test_calls_on_a_class_the_replacement_found_not_of_its_form_are_counted_apart(self):
        class FusedMLP:
            pass

        def make(t, original):
            def forward(self, x):
                return original(self, x)
            forward.other_classes = {FusedMLP}
            return forward
        t = target("swiglu", "class", "m.Phi3MLP.forward")
        call = S.serving_wrapper(make, self.launches, self.rows, [True])(t, None, lambda self, x: "original")
        self.assertEqual(call(FusedMLP(), 1), "original")
        row = self.rows[t.name].row(lambda type_, i: str(i))
        self.assertEqual((row["calls"], row["declined"], row["not_its_form"]), (0, 0, 1))
        self.assertEqual(S.shares_by_type([row]), {})

    def test_a_phi3_mlp_whose_halves_the_gate_product_takes_counts_as_served_not_apart(self):
        R = fake_torch.package_module("_replacements")
        launches, ops = Launches({"swiglu": 1}), fake_torch.OpNamespace()

        def swiglu(g, u):
            launches.counts["swiglu"][0] += 1
            return torch.nn.SiLU()(g) * u
        ops.results["swiglu"] = swiglu

        class Phi3MLP:   # transformers' form: one gate_up_proj, its halves gate and up
            def __init__(self):
                self._modules = {"gate_up_proj": torch.nn.Linear(0.5), "down_proj": torch.nn.Linear(1.0),
                                 "activation_fn": torch.nn.SiLU()}

            def forward(self, x):
                gate, up = self._modules["gate_up_proj"](x).chunk(2, dim=-1)
                return self._modules["down_proj"](up * self._modules["activation_fn"](gate))
        t = P.Target(None, "m.Phi3MLP", "forward", "swiglu", "class")
        armed = [False]
        call = S.serving_wrapper(lambda t, original: R.make_replacement(t, original, ops), launches, self.rows, armed)(
            t, None, lambda self, x: type(self).forward(self, x))
        mlp = Phi3MLP()
        call(mlp, torch.Tensor([1.0, 2.0]))   # the first call checks the class
        armed[0] = True
        for _ in range(3):
            call(mlp, torch.Tensor([1.0, 2.0]))
        row = self.rows[t.name].row(lambda type_, i: f"{type_}-file{i}")
        self.assertEqual((row["calls"], row["served"], row["not_its_form"], row["files"]), (3, 3, 0, {"swiglu-file0": 3}))

    def test_a_gated_mlp_counts_as_served_by_fused_mlp_or_by_the_gate_product_whichever_launched(self):
        launches = Launches({"fused_mlp": 1, "swiglu": 1})
        t = P.Target(None, "m.LlamaMLP", "forward", "fused_mlp", "class", ("swiglu",))

        def make(t, original):
            def forward(x):
                launches.counts["fused_mlp" if x == "tuned" else "swiglu"][0] += x != "fallback"
                return "op"
            return forward
        call = S.serving_wrapper(make, launches, self.rows, [True])(t, None, lambda x: "original")
        for x in ("tuned", "tuned", "other", "fallback"):
            call(x)
        row = self.rows[t.name].row(lambda type_, i: f"{type_}-file{i}")
        self.assertEqual((row["calls"], row["served"], row["op_fell_back"]), (4, 3, 1))
        self.assertEqual(row["files"], {"fused_mlp-file0": 2, "swiglu:swiglu-file0": 1})

    def test_shares_by_type_add_up_the_type_functions_and_leave_out_the_tables(self):
        rows = [{"type": "rmsnorm", "op": "rmsnorm", "calls": 10, "served": 10},
                {"type": "rmsnorm", "op": "rmsnorm", "calls": 10, "served": 0},
                {"type": "rotary_embedding", "op": "rotary_tables", "calls": 1, "served": 0},
                {"type": "rotary_embedding", "op": "rotary_embedding", "calls": 8, "served": 8}]
        self.assertEqual(S.shares_by_type(rows), {"rmsnorm": 0.5, "rotary_embedding": 1.0})


class FileTags(unittest.TestCase):
    def test_a_type_with_several_files_names_each_by_its_tag_in_the_launchers_order(self):
        tags = S.file_tags({"ops": [{"type": "rmsnorm", "tag": "norm", "files": [{"tag": "norm"}, {"tag": "qk_norm"}]}]})
        self.assertEqual((tags("rmsnorm", 0), tags("rmsnorm", 1)), ("norm", "qk_norm"))

    def test_an_export_of_one_file_per_type_names_its_op_and_an_unknown_index_says_so(self):
        tags = S.file_tags({"ops": [{"type": "softmax", "tag": "", "origin": "starter"}]})
        self.assertEqual((tags("softmax", 0), tags("softmax", 3), tags("reduce", 0)), ("starter", "file 3", "file 0"))


if __name__ == "__main__":
    unittest.main()
