"""The replacements of the exported package (daemon/export/package/autokernel_ops/_replacements.py)
and its per-op compile decision (_compile_decision.py), on a stand-in torch (fake_torch.py): which
calls reach the op, that compilation without a decision and a CUDA graph capture run the original,
that a checked replacement makes one op call, that a disagreeing first call withdraws, and the
decision over scripted timings. Run by ctest: python3 -m unittest replacements_test.py"""
import contextlib
import io
import math
import sys
import types
import unittest

import fake_torch

torch = fake_torch.install()
R = fake_torch.package_module("_replacements")
D = fake_torch.package_module("_compile_decision")
P = fake_torch.package_module("_patch")
State = torch.State


def target(kind, type_, name="m.X.forward"):
    owner_name, attr = name.rsplit(".", 1)
    return P.Target(None, owner_name, attr, type_, kind)


class Calls:
    """An original that records its calls and returns `value`."""

    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.value


class Norm:
    """A model's own RMSNorm: a weight and a variance_epsilon."""

    def __init__(self, dtype=None):
        self.weight = torch.Tensor([1.0, 1.0], dtype or torch.float16)
        self.variance_epsilon = 1e-6


class Base(unittest.TestCase):
    def setUp(self):
        State.compiling = State.capturing = State.grad = False
        State.allclose_calls = 0
        self.ops = torch.ops.autokernel = fake_torch.OpNamespace()
        R.set_compile_ops(())
        R._said.clear()   # each test hears the reasons it causes

    def op_calls(self, name=None):
        return [c for c in self.ops.calls if name is None or c[0] == name]


class Functional(Base):
    def test_a_call_the_kernel_computes_is_one_op_call_with_the_dtypes_epsilon_when_none_is_given(self):
        original = Calls("original")
        rms_norm = R.make_replacement(target("functional", "rmsnorm"), original, self.ops)
        x, w = torch.Tensor([1.0, 2.0]), torch.Tensor([1.0, 1.0])
        out = rms_norm(x, (2,), w)
        self.assertEqual(out.values, [1.0, 2.0])
        self.assertEqual(original.calls, 0)
        self.assertEqual(self.op_calls(), [("rmsnorm", (x, w, 2 ** -10))])

    def test_under_compilation_without_a_decision_the_original_runs(self):
        original = Calls("original")
        rms_norm = R.make_replacement(target("functional", "rmsnorm"), original, self.ops)
        State.compiling = True
        self.assertEqual(rms_norm(torch.Tensor([1.0]), (1,), torch.Tensor([1.0]), 1e-6), "original")
        self.assertEqual(self.op_calls(), [])

    def test_under_compilation_a_decided_type_runs_its_op_and_the_others_the_original(self):
        softmax_original = Calls("original softmax")
        rms_norm = R.make_replacement(target("functional", "rmsnorm"), Calls("original"), self.ops)
        softmax = R.make_replacement(target("functional", "softmax"), softmax_original, self.ops)
        R.set_compile_ops({"rmsnorm"})
        State.compiling = True
        rms_norm(torch.Tensor([1.0]), (1,), torch.Tensor([1.0]), 1e-6)
        self.assertEqual(softmax(torch.Tensor([1.0]), -1), "original softmax")
        self.assertEqual([c[0] for c in self.op_calls()], ["rmsnorm"])

    def test_cross_entropy_is_held_back_under_compilation_like_the_others(self):
        original = Calls("original")
        ce = R.make_replacement(target("functional", "cross_entropy"), original, self.ops)
        State.compiling = True
        self.assertEqual(ce(torch.Tensor([1.0]), torch.Tensor([0.0])), "original")
        self.assertEqual(self.op_calls(), [])

    def test_a_call_that_needs_gradients_runs_the_original(self):
        original = Calls("original")
        layer_norm = R.make_replacement(target("functional", "layernorm"), original, self.ops)
        State.grad = True
        w = torch.Tensor([1.0], requires_grad=True)
        self.assertEqual(layer_norm(torch.Tensor([1.0]), (1,), w, torch.Tensor([0.0])), "original")
        State.grad = False  # inference: the same call runs the op
        layer_norm(torch.Tensor([1.0]), (1,), w, torch.Tensor([0.0]))
        self.assertEqual(len(self.op_calls("layernorm")), 1)

    def test_a_softmax_over_another_dimension_or_with_a_dtype_runs_the_original(self):
        original = Calls("original")
        softmax = R.make_replacement(target("functional", "softmax"), original, self.ops)
        x = torch.Tensor([1.0, 2.0], ndim=3)
        softmax(x, 1)
        softmax(x, -1, dtype=torch.float32)
        softmax(x, None)
        self.assertEqual((original.calls, self.op_calls()), (3, []))
        softmax(x, 2)  # the last dimension, named by its index
        softmax(x, -1)
        self.assertEqual(len(self.op_calls("softmax")), 2)

    def test_a_capture_does_not_stop_a_functional_replacement(self):
        rms_norm = R.make_replacement(target("functional", "rmsnorm"), Calls("original"), self.ops)
        State.capturing = True
        rms_norm(torch.Tensor([1.0]), (1,), torch.Tensor([1.0]), 1e-6)
        self.assertEqual(len(self.op_calls()), 1)
        self.assertEqual(State.allclose_calls, 0)


class DirectCalls(Base):
    """Eager calls go to the op's function without the dispatcher; compiled ones to the registered op."""

    def direct(self, name):
        calls = []

        def call(*args):
            calls.append(args)
            return torch.Tensor([1.0, 2.0])
        return calls, {name: call}

    def test_an_eager_call_takes_the_direct_function_and_never_the_dispatcher(self):
        calls, direct = self.direct("rmsnorm")
        rms_norm = R.make_replacement(target("functional", "rmsnorm"), Calls("original"), self.ops, direct=direct)
        rms_norm(torch.Tensor([1.0, 2.0]), (2,), torch.Tensor([1.0, 1.0]), 1e-6)
        self.assertEqual((len(calls), self.op_calls()), (1, []))

    def test_a_decided_type_under_compilation_takes_the_registered_op_which_the_compiler_can_trace(self):
        calls, direct = self.direct("rmsnorm")
        R.set_compile_ops({"rmsnorm"})
        rms_norm = R.make_replacement(target("functional", "rmsnorm"), Calls("original"), self.ops, direct=direct)
        State.compiling = True
        rms_norm(torch.Tensor([1.0, 2.0]), (2,), torch.Tensor([1.0, 1.0]), 1e-6)
        self.assertEqual((calls, len(self.op_calls("rmsnorm"))), ([], 1))

    def test_a_functional_call_on_a_traced_tensor_is_decided_as_compiled_and_never_takes_the_direct_function(self):
        # AOTAutograd runs F.layer_norm's replacement on fake tensors (a subclass), not under Dynamo.
        class FakeTensor(torch.Tensor):
            pass
        calls, direct = self.direct("layernorm")
        original = Calls("original")
        layer_norm = R.make_replacement(target("functional", "layernorm"), original, self.ops, direct=direct)
        x, w, b = FakeTensor([1.0, 2.0]), torch.Tensor([1.0, 1.0]), torch.Tensor([0.0, 0.0])
        self.assertEqual(layer_norm(x, (2,), w, b), "original")   # no decision: the original is traced
        R.set_compile_ops({"layernorm"})
        layer_norm(x, (2,), w, b)
        self.assertEqual((calls, len(self.op_calls("layernorm")), original.calls), ([], 1, 1))

    def test_a_checked_rotary_helper_takes_the_direct_function_with_q_and_k_as_given(self):
        calls, direct = self.direct("rotary_embedding")
        original = Calls((torch.Tensor([1.0, 2.0]), torch.Tensor([1.0, 2.0])))
        self.ops.results["rotary_embedding"] = lambda *a: (torch.Tensor([1.0, 2.0]), torch.Tensor([1.0, 2.0]))
        direct["rotary_embedding"] = lambda *a: (calls.append(a), (torch.Tensor([1.0, 2.0]), torch.Tensor([1.0, 2.0])))[1]
        rope = R.make_replacement(target("function", "rotary_embedding"), original, self.ops, direct=direct)
        q, k = torch.Tensor([1.0, 2.0]), torch.Tensor([3.0, 4.0])
        cos = types.SimpleNamespace(ndim=3)
        rope(q, k, cos, cos)   # the first call: checked against the original
        rope(q, k, cos, cos)
        self.assertEqual(len(calls), 2)
        self.assertIs(calls[-1][0], q)   # no copy: the very tensors the model passed
        self.assertIs(calls[-1][1], k)
        self.assertEqual(self.op_calls(), [])

    def test_a_model_helper_with_a_two_dimensional_table_takes_the_op_and_one_of_four_does_not(self):
        calls, direct = self.direct("rotary_embedding")
        original = Calls((torch.Tensor([1.0, 2.0]), torch.Tensor([1.0, 2.0])))
        direct["rotary_embedding"] = lambda *a: (calls.append(a), (torch.Tensor([1.0, 2.0]), torch.Tensor([1.0, 2.0])))[1]
        rope = R.make_replacement(target("function", "rotary_embedding"), original, self.ops, direct=direct)
        q, k = torch.Tensor([1.0, 2.0]), torch.Tensor([3.0, 4.0])
        table = types.SimpleNamespace(ndim=2)   # [seq, head_dim], broadcast over batch and heads
        rope(q, k, table, table)
        rope(q, k, table, table)
        self.assertEqual((len(calls), original.calls), (2, 1))
        rope(q, k, types.SimpleNamespace(ndim=4), types.SimpleNamespace(ndim=4))
        self.assertEqual((len(calls), original.calls), (2, 2))


class CheckedOnFirstCall(Base):
    def agreeing_forward(self):
        original = Calls(torch.Tensor([1.0, 2.0]))
        return original, R.make_replacement(target("class", "rmsnorm"), original, self.ops)

    def test_the_first_eager_call_compares_once_and_later_calls_are_one_op_call_each(self):
        original, forward = self.agreeing_forward()
        norm, x = Norm(), torch.Tensor([3.0, 4.0])
        forward(norm, x)
        self.assertEqual((State.allclose_calls, original.calls, len(self.op_calls())), (1, 1, 1))
        for _ in range(3):
            forward(norm, x)
        self.assertEqual((State.allclose_calls, original.calls), (1, 1))
        self.assertEqual(self.op_calls()[1:], [("rmsnorm", (x, norm.weight, 1e-6))] * 3)

    def test_under_capture_an_unchecked_replacement_runs_the_original_without_comparing(self):
        original, forward = self.agreeing_forward()
        State.capturing = True
        forward(Norm(), torch.Tensor([3.0, 4.0]))
        self.assertEqual((State.allclose_calls, original.calls, self.op_calls()), (0, 1, []))
        State.capturing = False  # the first eager call outside the capture is the check
        forward(Norm(), torch.Tensor([3.0, 4.0]))
        self.assertEqual((State.allclose_calls, len(self.op_calls())), (1, 1))

    def test_once_checked_a_capture_runs_the_op(self):
        original, forward = self.agreeing_forward()
        forward(Norm(), torch.Tensor([3.0, 4.0]))
        State.capturing = True
        forward(Norm(), torch.Tensor([3.0, 4.0]))
        self.assertEqual((original.calls, len(self.op_calls()), State.allclose_calls), (1, 2, 1))

    def test_under_compilation_a_checked_replacement_runs_the_original_until_its_type_is_decided(self):
        original, forward = self.agreeing_forward()
        forward(Norm(), torch.Tensor([3.0, 4.0]))
        State.compiling = True
        forward(Norm(), torch.Tensor([3.0, 4.0]))
        self.assertEqual((original.calls, len(self.op_calls())), (2, 1))
        R.set_compile_ops(["rmsnorm"])
        forward(Norm(), torch.Tensor([3.0, 4.0]))
        self.assertEqual((original.calls, len(self.op_calls())), (2, 2))

    def test_an_unchecked_replacement_is_not_checked_under_compilation_even_when_decided(self):
        original, forward = self.agreeing_forward()
        R.set_compile_ops(["rmsnorm"])
        State.compiling = True
        forward(Norm(), torch.Tensor([3.0, 4.0]))
        self.assertEqual((original.calls, self.op_calls(), State.allclose_calls), (1, [], 0))

    def test_a_disagreeing_first_call_withdraws_the_replacement_for_good(self):
        original = Calls(torch.Tensor([9.0, 9.0]))  # e.g. a norm that scales by 1 + weight
        forward = R.make_replacement(target("class", "rmsnorm", "m.GemmaRMSNorm.forward"), original, self.ops)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(forward(Norm(), torch.Tensor([3.0, 4.0])).values, [9.0, 9.0])
        self.assertIn("m.GemmaRMSNorm.forward disagrees with autokernel::rmsnorm", err.getvalue())
        for _ in range(2):
            forward(Norm(), torch.Tensor([3.0, 4.0]))
        self.assertEqual((original.calls, len(self.op_calls()), State.allclose_calls), (3, 1, 1))

    def test_a_class_whose_weight_has_another_dtype_keeps_its_own_forward(self):
        original, forward = self.agreeing_forward()
        forward(Norm(torch.float32), torch.Tensor([3.0, 4.0]))
        self.assertEqual((original.calls, self.op_calls(), State.allclose_calls), (1, [], 0))

    def test_a_layer_norm_class_with_eps_and_bias_calls_the_op_with_both(self):
        class LayerNorm:
            def __init__(self):
                self.weight, self.bias, self.eps = torch.Tensor([1.0]), torch.Tensor([0.0]), 1e-5
        original = Calls(torch.Tensor([1.0, 2.0]))
        forward = R.make_replacement(target("class", "layernorm"), original, self.ops)
        ln, x = LayerNorm(), torch.Tensor([3.0, 4.0])
        forward(ln, x)
        forward(ln, x)
        self.assertEqual(self.op_calls()[-1], ("layernorm", (x, ln.weight, ln.bias, 1e-5)))


class CheckedCalls(Base):
    """What a checked replacement reads and passes on."""

    def test_a_modules_weight_is_read_from_its_parameters_without_the_modules_getattr(self):
        class ModuleNorm:   # nn.Module keeps parameters in _parameters and finds them in __getattr__
            lookups = 0

            def __init__(self):
                self._parameters = {"weight": torch.Tensor([1.0, 1.0])}
                self.variance_epsilon = 1e-6

            def __getattr__(self, name):
                ModuleNorm.lookups += 1
                if name in self.__dict__.get("_parameters", {}):
                    return self.__dict__["_parameters"][name]
                raise AttributeError(name)
        forward = R.make_replacement(target("class", "rmsnorm"), Calls(torch.Tensor([1.0, 2.0])), self.ops)
        norm, x = ModuleNorm(), torch.Tensor([3.0, 4.0])
        forward(norm, x)
        ModuleNorm.lookups = 0
        forward(norm, x)
        self.assertEqual(ModuleNorm.lookups, 0)
        self.assertEqual(self.op_calls()[-1], ("rmsnorm", (x, norm._parameters["weight"], 1e-6)))

    def test_under_compilation_the_weight_is_read_the_way_the_class_reads_it(self):
        class ModuleNorm:
            def __init__(self):
                self._parameters = {"weight": torch.Tensor([1.0, 1.0])}
                self.variance_epsilon, self.read = 1e-6, []

            def __getattr__(self, name):
                if name == "weight":
                    self.read.append(name)
                    return self._parameters[name]
                raise AttributeError(name)
        forward = R.make_replacement(target("class", "rmsnorm"), Calls(torch.Tensor([1.0, 2.0])), self.ops)
        norm, x = ModuleNorm(), torch.Tensor([3.0, 4.0])
        forward(norm, x)
        R.set_compile_ops({"rmsnorm"})
        State.compiling = True
        forward(norm, x)
        self.assertEqual(norm.read, ["weight"])

    def test_a_rotary_call_with_a_fifth_positional_or_another_unsqueeze_dim_runs_the_original(self):
        original = Calls((torch.Tensor([1.0, 2.0]), torch.Tensor([1.0, 2.0])))
        self.ops.results["rotary_embedding"] = lambda *a: (torch.Tensor([1.0, 2.0]), torch.Tensor([1.0, 2.0]))
        rope = R.make_replacement(target("function", "rotary_embedding"), original, self.ops)
        q, k, cos = torch.Tensor([1.0, 2.0]), torch.Tensor([3.0, 4.0]), types.SimpleNamespace(ndim=3)
        rope(q, k, cos, cos)                       # checked
        rope(q, k, cos, cos, None, 1)              # a helper's fifth positional: unknown meaning
        rope(q, k, cos, cos, unsqueeze_dim=2)
        self.assertEqual((original.calls, len(self.op_calls())), (3, 1))
        rope(q, k, cos, cos, position_ids=None, unsqueeze_dim=1)
        self.assertEqual((original.calls, len(self.op_calls())), (3, 2))


class RotaryTables(Base):
    """A model's rotary-embedding class: its cos and sin tables in one call of autokernel::rotary_tables."""

    class Rotary:
        def __init__(self, rope_type="default", scaling=1.0):
            self._buffers = {"inv_freq": torch.Tensor([1.0, 0.5], torch.float32)}
            self.rope_type, self.attention_scaling = rope_type, scaling

    def tables(self):
        original = Calls((torch.Tensor([1.0, 2.0]), torch.Tensor([3.0, 4.0])))
        self.ops.results["rotary_tables"] = lambda *a: (torch.Tensor([1.0, 2.0]), torch.Tensor([3.0, 4.0]))
        return original, R.make_replacement(target("class", "rotary_embedding", "m.LlamaRotaryEmbedding.forward"),
                                            original, self.ops)

    def test_a_checked_class_makes_its_tables_in_one_op_call_from_its_inv_freq_and_scaling(self):
        original, forward = self.tables()
        rotary, x, positions = self.Rotary(scaling=0.5), torch.Tensor([0.0]), torch.Tensor([0.0, 1.0], ndim=2)
        forward(rotary, x, positions)   # the first call, compared with the class's own
        forward(rotary, x, positions)
        self.assertEqual((original.calls, State.allclose_calls), (1, 2))   # cos and sin each compared once
        self.assertEqual(self.op_calls()[-1], ("rotary_tables", (rotary._buffers["inv_freq"], positions, x, 0.5)))
        self.assertEqual(len(self.op_calls()), 2)

    def test_a_rope_that_changes_with_the_sequence_runs_the_class_own_forward(self):
        for rope_type in ("dynamic", "longrope"):
            original, forward = self.tables()
            for _ in range(2):
                forward(self.Rotary(rope_type), torch.Tensor([0.0]), torch.Tensor([0.0, 1.0], ndim=2))
            self.assertEqual((original.calls, self.op_calls("rotary_tables")), (2, []))

    def test_tables_off_the_gpu_or_across_devices_run_the_class_own_forward(self):
        original, forward = self.tables()
        rotary = self.Rotary()
        forward(rotary, torch.Tensor([0.0]), torch.Tensor([0.0, 1.0], ndim=2))   # checked on the GPU
        forward(rotary, torch.Tensor([0.0], device="cpu"), torch.Tensor([0.0, 1.0], ndim=2, device="cpu"))
        forward(rotary, torch.Tensor([0.0], device="cuda:1"), torch.Tensor([0.0, 1.0], ndim=2, device="cuda:1"))
        self.assertEqual((original.calls, len(self.op_calls("rotary_tables"))), (3, 1))

    def test_under_compilation_the_class_own_forward_runs_even_when_rotary_is_decided(self):
        original, forward = self.tables()
        rotary, x, positions = self.Rotary(), torch.Tensor([0.0]), torch.Tensor([0.0, 1.0], ndim=2)
        forward(rotary, x, positions)
        R.set_compile_ops({"rotary_embedding"})
        State.compiling = True
        forward(rotary, x, positions)
        self.assertEqual((original.calls, len(self.op_calls("rotary_tables"))), (2, 1))

    def test_a_class_that_keeps_its_tables_in_fp32_gets_fp32_tables_from_the_op_and_stays_checked(self):
        # OLMo2's rotary class returns cos and sin in fp32 for an fp16 model; the op rounds to `like`'s dtype.
        original = Calls((torch.Tensor([1.0, 2.0], torch.float32), torch.Tensor([3.0, 4.0], torch.float32)))
        self.ops.results["rotary_tables"] = lambda inv, pos, like, scaling: (torch.Tensor([1.0, 2.0], like.dtype),
                                                                             torch.Tensor([3.0, 4.0], like.dtype))
        forward = R.make_replacement(target("class", "rotary_embedding", "m.Olmo2RotaryEmbedding.forward"), original, self.ops)
        rotary, x, positions = self.Rotary(), torch.Tensor([0.0]), torch.Tensor([0.0, 1.0], ndim=2)
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            forward(rotary, x, positions)   # the first call: learns the class's dtype, then compares
            cos, sin = forward(rotary, x, positions)
        self.assertEqual(stderr.getvalue(), "")   # not withdrawn
        self.assertEqual((cos.dtype, sin.dtype, original.calls), (torch.float32, torch.float32, 1))
        like = self.op_calls("rotary_tables")[-1][1][2]
        self.assertIsNot(like, x)
        self.assertEqual((like.dtype, like.device), (torch.float32, x.device))

    def test_a_class_that_rounds_its_tables_to_the_models_dtype_gets_them_like_x(self):
        original, forward = self.tables()
        rotary, x, positions = self.Rotary(), torch.Tensor([0.0]), torch.Tensor([0.0, 1.0], ndim=2)
        forward(rotary, x, positions)
        forward(rotary, x, positions)
        self.assertIs(self.op_calls("rotary_tables")[-1][1][2], x)


class Projection:
    """A Linear stand-in: records its inputs and returns `values`, which need gradients where grad
    mode is on and its weight trains or its input needs them."""

    def __init__(self, values, trains=False):
        self.values, self.trains, self.inputs = values, trains, []

    def __call__(self, x):
        self.inputs.append(x)
        return torch.Tensor(self.values, x.dtype, State.grad and (self.trains or x.requires_grad))


class Counting(dict):
    """nn.Module's _modules, counting the lookups a replacement makes in it."""
    gets = 0

    def get(self, *args):
        Counting.gets += 1
        return super().get(*args)


class GatedMLP:
    """transformers' LlamaMLP as a stand-in: its submodules where nn.Module keeps them."""

    def __init__(self, act=None, gate_trains=False):
        self._modules = Counting(gate_proj=Projection([0.5, -1.0], gate_trains), up_proj=Projection([2.0, 3.0]),
                                 down_proj=Projection([7.0, 7.0]), act_fn=torch.nn.SiLU() if act is None else act)
        self.__dict__.update(self._modules)   # read by attribute too, as under compilation

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class GatedMLPs(Base):
    """A model's *MLP class: one op call for the gate product where it is gated with SiLU."""

    def setUp(self):
        super().setUp()
        self.ops.results["swiglu"] = lambda g, u: torch.nn.SiLU()(g) * u
        self.original_calls = 0

    def replacement(self, direct=None):
        def original(mlp, x, *args, **kwargs):
            self.original_calls += 1
            return type(mlp).forward(mlp, x)
        return R.make_replacement(target("class", "swiglu", "m.LlamaMLP.forward"), original, self.ops, direct=direct)

    def checked(self, mlp, direct=None):
        forward = self.replacement(direct)
        forward(mlp, torch.Tensor([1.0, 1.0]))   # the first call: compared with the class's own
        self.assertEqual((State.allclose_calls, self.original_calls), (1, 1))
        for p in ("gate_proj", "up_proj", "down_proj"):
            mlp._modules[p].inputs.clear()
        self.ops.calls.clear()
        return forward

    def test_a_checked_gated_mlp_makes_one_op_call_on_the_projections_and_feeds_down_proj_with_it(self):
        mlp = GatedMLP()
        forward = self.checked(mlp)
        x = torch.Tensor([1.0, 1.0])
        out = forward(mlp, x)
        gate, up, down = (mlp._modules[p] for p in ("gate_proj", "up_proj", "down_proj"))
        self.assertEqual(len(self.op_calls()), 1)
        name, (g, u) = self.op_calls()[0]
        self.assertEqual(name, "swiglu")
        self.assertEqual((gate.inputs, up.inputs, g.values, u.values), ([x], [x], [0.5, -1.0], [2.0, 3.0]))
        self.assertEqual(len(down.inputs), 1)
        self.assertAlmostEqual(down.inputs[0].values[0], 0.5 / (1 + math.exp(-0.5)) * 2.0)
        self.assertEqual((out.values, self.original_calls, State.allclose_calls), ([7.0, 7.0], 1, 1))

    def test_an_eager_call_takes_the_direct_function(self):
        calls = []
        mlp = GatedMLP()
        forward = self.checked(mlp, direct={"swiglu": lambda g, u: (calls.append((g, u)), g * u)[1]})
        forward(mlp, torch.Tensor([1.0, 1.0]))
        self.assertEqual((len(calls), self.op_calls()), (2, []))   # the first call's probe took it too

    def test_an_activation_other_than_silu_runs_the_class_own_forward_unchecked(self):
        class GELU:
            def __call__(self, x):
                return x

        class NotQuiteSiLU(torch.nn.SiLU):   # a subclass may compute something else
            pass
        for act in (GELU(), NotQuiteSiLU()):
            with self.subTest(act=type(act).__name__):
                self.original_calls = 0
                forward, mlp = self.replacement(), GatedMLP(act)
                for _ in range(3):
                    forward(mlp, torch.Tensor([1.0, 1.0]))
                self.assertEqual((self.original_calls, self.op_calls(), State.allclose_calls), (3, [], 0))

    def test_transformers_own_silu_module_is_a_silu_where_transformers_is_loaded(self):
        class SiLUActivation:   # ACT2FN["silu"] in transformers 5, not an nn.SiLU
            def __call__(self, x):
                return torch.nn.SiLU()(x)
        mlp = GatedMLP(SiLUActivation())
        forward = self.replacement()   # made before transformers is loaded: its class is unknown
        for _ in range(2):
            forward(mlp, torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, self.op_calls()), (2, []))
        sys.modules["transformers.activations"] = types.SimpleNamespace(SiLUActivation=SiLUActivation)
        self.addCleanup(sys.modules.pop, "transformers.activations")
        forward = self.replacement()
        for _ in range(2):
            forward(mlp, torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, len(self.op_calls("swiglu")), State.allclose_calls), (3, 2, 1))

    def test_a_checked_class_whose_instance_has_another_activation_runs_its_forward(self):
        forward = self.checked(GatedMLP())
        forward(GatedMLP(act=lambda x: x), torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, self.op_calls()), (2, []))

    def test_extra_arguments_run_the_original(self):
        mlp = GatedMLP()
        forward = self.checked(mlp)
        forward(mlp, torch.Tensor([1.0, 1.0]), None)
        forward(mlp, torch.Tensor([1.0, 1.0]), scale=2.0)
        self.assertEqual((self.original_calls, self.op_calls()), (3, []))

    def test_an_input_that_needs_gradients_runs_the_original(self):
        mlp = GatedMLP()
        forward = self.checked(mlp)
        State.grad = True
        forward(mlp, torch.Tensor([1.0, 1.0], requires_grad=True))
        self.assertEqual((self.original_calls, self.op_calls()), (2, []))
        State.grad = False   # the same tensor under no_grad: the op
        forward(mlp, torch.Tensor([1.0, 1.0], requires_grad=True))
        self.assertEqual((self.original_calls, len(self.op_calls())), (2, 1))

    def test_projections_that_train_get_pytorchs_product_without_projecting_twice(self):
        mlp = GatedMLP(gate_trains=True)
        forward = self.checked(mlp)
        State.grad = True
        out = forward(mlp, torch.Tensor([1.0, 1.0]))
        gate, down = mlp._modules["gate_proj"], mlp._modules["down_proj"]
        self.assertEqual((self.original_calls, self.op_calls(), len(gate.inputs)), (1, [], 1))
        self.assertTrue(down.inputs[0].requires_grad)
        self.assertAlmostEqual(down.inputs[0].values[1], -1.0 / (1 + math.exp(1.0)) * 3.0)
        self.assertEqual(out.values, [7.0, 7.0])

    def test_a_first_call_whose_projections_train_leaves_the_class_unchecked(self):
        forward, mlp = self.replacement(), GatedMLP(gate_trains=True)
        State.grad = True
        forward(mlp, torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, State.allclose_calls), (1, 0))
        State.grad = False   # inference: this call is the check
        forward(mlp, torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, State.allclose_calls, len(self.op_calls())), (2, 1, 1))

    def test_under_compilation_the_original_runs_until_swiglu_is_decided_then_the_registered_op(self):
        calls = []
        mlp = GatedMLP()
        forward = self.checked(mlp, direct={"swiglu": lambda g, u: (calls.append(1), g * u)[1]})
        State.compiling = True
        forward(mlp, torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, self.op_calls()), (2, []))
        R.set_compile_ops({"swiglu"})
        forward(mlp, torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, len(self.op_calls("swiglu")), len(calls)), (2, 1, 1))  # calls: the probe's

    def test_an_mlp_that_is_not_gated_runs_its_own_forward_and_is_probed_once_per_class(self):
        class GPT2MLP:   # c_fc, act, c_proj: no gate
            def __init__(self):
                self._modules = Counting(c_fc=Projection([1.0, 1.0]), c_proj=Projection([1.0, 1.0]),
                                         act=torch.nn.SiLU())

            def forward(self, x):
                return self._modules["c_proj"](self._modules["act"](self._modules["c_fc"](x)))
        forward = self.replacement()
        Counting.gets = 0
        for _ in range(3):
            forward(GPT2MLP(), torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, self.op_calls(), State.allclose_calls), (3, [], 0))
        self.assertEqual(Counting.gets, 7)   # the first call's probe alone looked for the parts, of both forms
        self.assertEqual(forward.other_classes, {GPT2MLP})   # what verify counts apart from declined calls
        forward(GatedMLP(), torch.Tensor([1.0, 1.0]))   # another class: probed and checked on its own
        self.assertEqual((State.allclose_calls, len(self.op_calls("swiglu"))), (1, 1))


class GateUpMLP:
    """transformers' Phi3MLP as a stand-in: one gate_up_proj whose halves are gate and up."""

    def __init__(self, act=None, trains=False):
        self._modules = Counting(gate_up_proj=Projection([0.5, -1.0, 2.0, 3.0], trains), down_proj=Projection([7.0, 7.0]),
                                 activation_fn=torch.nn.SiLU() if act is None else act)
        self.__dict__.update(self._modules)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(up * self.activation_fn(gate))


class GateUpMLPs(Base):
    """A *MLP class with a fused gate_up_proj (Phi3MLP): the op on the projection's two halves, where
    the exported swiglu follows version 2 of its contract (rows of gate and up ld apart)."""

    def setUp(self):
        super().setUp()
        self.ops.results["swiglu"] = lambda g, u: torch.nn.SiLU()(g) * u
        self.original_calls = 0

    def replacement(self, versions=None, types=("swiglu",), direct=None):
        def original(mlp, x, *args, **kwargs):
            self.original_calls += 1
            return type(mlp).forward(mlp, x)
        t = P.Target(None, "m.Phi3MLP", "forward", types[0], "class", types[1:])
        return R.make_replacement(t, original, self.ops, versions=versions, direct=direct)

    def test_a_checked_phi3_mlp_hands_the_halves_of_its_projection_to_the_op_and_feeds_down_proj(self):
        mlp, forward = GateUpMLP(), self.replacement()
        forward(mlp, torch.Tensor([1.0, 1.0]))   # the first call: compared with the class's own
        self.assertEqual((self.original_calls, State.allclose_calls), (1, 1))
        for p in ("gate_up_proj", "down_proj"):
            mlp._modules[p].inputs.clear()
        self.ops.calls.clear()
        x = torch.Tensor([1.0, 1.0])
        out = forward(mlp, x)
        name, (g, u) = self.op_calls()[0]
        self.assertEqual((len(self.op_calls()), name, g.values, u.values), (1, "swiglu", [0.5, -1.0], [2.0, 3.0]))
        self.assertEqual(mlp._modules["gate_up_proj"].inputs, [x])   # projected once
        self.assertAlmostEqual(mlp._modules["down_proj"].inputs[0].values[1], -1.0 / (1 + math.exp(1.0)) * 3.0)
        self.assertEqual((out.values, self.original_calls, forward.other_classes), ([7.0, 7.0], 1, set()))

    def test_a_version_1_swiglu_or_fused_mlp_alone_leaves_a_phi3_mlp_its_own_forward_not_of_the_ops_form(self):
        cases = {"swiglu version 1": dict(versions={"swiglu": 1}), "fused_mlp alone": dict(types=("fused_mlp",))}
        for name, kwargs in cases.items():
            with self.subTest(name):
                self.original_calls, State.allclose_calls = 0, 0
                forward = self.replacement(**kwargs)
                for _ in range(3):
                    forward(GateUpMLP(), torch.Tensor([1.0, 1.0]))
                self.assertEqual((self.original_calls, self.op_calls(), State.allclose_calls), (3, [], 0))
                self.assertEqual(forward.other_classes, {GateUpMLP})

    def test_an_activation_other_than_silu_runs_the_class_own_forward(self):
        class GELU:
            def __call__(self, x):
                return x
        forward = self.replacement()
        for _ in range(2):
            forward(GateUpMLP(GELU()), torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, self.op_calls()), (2, []))
        self.assertEqual(forward.other_classes, {GateUpMLP})

    def test_gradients_get_the_models_product_on_the_projection_already_made(self):
        forward = self.replacement()
        forward(GateUpMLP(), torch.Tensor([1.0, 1.0]))
        State.grad = True
        forward(GateUpMLP(), torch.Tensor([1.0, 1.0], requires_grad=True))   # the input needs them: the original
        self.assertEqual((self.original_calls, len(self.op_calls())), (2, 1))
        mlp = GateUpMLP(trains=True)
        out = forward(mlp, torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, len(self.op_calls()), len(mlp._modules["gate_up_proj"].inputs)), (2, 1, 1))
        self.assertTrue(mlp._modules["down_proj"].inputs[0].requires_grad)
        self.assertEqual(out.values, [7.0, 7.0])

    def test_under_compilation_the_original_runs_until_swiglu_is_decided_then_the_registered_op(self):
        calls = []
        forward = self.replacement(direct={"swiglu": lambda g, u: (calls.append(1), g * u)[1]})
        forward(GateUpMLP(), torch.Tensor([1.0, 1.0]))
        State.compiling = True
        forward(GateUpMLP(), torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, self.op_calls()), (2, []))
        R.set_compile_ops({"swiglu"})
        forward(GateUpMLP(), torch.Tensor([1.0, 1.0]))
        self.assertEqual((self.original_calls, len(self.op_calls("swiglu")), len(calls)), (2, 1, 1))  # calls: the probe's

    def test_plain_linears_are_two_linear_calls_and_no_module_call_with_the_class_own_result(self):
        mlp = GateUpMLP()
        mlp._modules.update(gate_up_proj=torch.nn.Linear(0.5), down_proj=torch.nn.Linear(1.0, 1.0))
        mlp.__dict__.update(mlp._modules)
        forward = self.replacement()
        x = torch.Tensor([1.0, 2.0])
        forward(mlp, x)
        self.ops.calls.clear()
        torch.nn.Linear.module_calls = State.linear_calls = 0
        out = forward(mlp, x)
        self.assertEqual((torch.nn.Linear.module_calls, State.linear_calls, len(self.op_calls("swiglu"))), (0, 2, 1))
        want = type(mlp).forward(mlp, x)
        for got, expected in zip(out.values, want.values):
            self.assertAlmostEqual(got, expected)


class PlainLinearMLP:
    """A gated MLP whose projections are nn.Linear modules, as transformers builds them."""

    def __init__(self):
        self._modules = {"gate_proj": torch.nn.Linear(0.5), "up_proj": torch.nn.Linear(2.0),
                         "down_proj": torch.nn.Linear(1.0, 1.0), "act_fn": torch.nn.SiLU()}
        self.__dict__.update(self._modules)

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class PlainProjections(Base):
    """A checked gated MLP computes plain nn.Linear projections as their forward does, F.linear on
    their own parameters, without the module calls; anything that would see a module call gets it."""

    def setUp(self):
        super().setUp()
        self.ops.results["swiglu"] = lambda g, u: torch.nn.SiLU()(g) * u
        hooks = torch.nn.modules.module
        self.addCleanup(hooks._global_forward_hooks.clear)
        self.addCleanup(hooks._global_forward_pre_hooks.clear)

    def checked(self):
        mlp = PlainLinearMLP()
        forward = R.make_replacement(target("class", "swiglu", "m.LlamaMLP.forward"),
                                     lambda m, x: type(m).forward(m, x), self.ops)
        forward(mlp, torch.Tensor([1.0, 2.0]))   # the first call: compared with the class's own
        self.ops.calls.clear()
        torch.nn.Linear.module_calls = State.linear_calls = 0
        return forward, mlp

    def test_plain_projections_are_three_linear_calls_and_no_module_call_with_the_class_own_result(self):
        forward, mlp = self.checked()
        x = torch.Tensor([1.0, 2.0])
        out = forward(mlp, x)
        self.assertEqual((torch.nn.Linear.module_calls, State.linear_calls, len(self.op_calls("swiglu"))), (0, 3, 1))
        want = type(mlp).forward(mlp, x)
        for got, expected in zip(out.values, want.values):
            self.assertAlmostEqual(got, expected)

    def test_a_hook_grad_mode_a_subclass_or_compilation_gets_the_module_calls(self):
        class LoRALinear(torch.nn.Linear):
            pass
        hooks = torch.nn.modules.module
        cases = {
            "a forward hook on up_proj": lambda mlp: mlp._modules["up_proj"]._forward_hooks.update(h=print),
            "a pre-hook on down_proj": lambda mlp: mlp._modules["down_proj"]._forward_pre_hooks.update(h=print),
            "a global forward hook": lambda mlp: hooks._global_forward_hooks.update(h=print),
            "a global pre-hook": lambda mlp: hooks._global_forward_pre_hooks.update(h=print),
            "a compiled gate_proj": lambda mlp: setattr(mlp._modules["gate_proj"], "_compiled_call_impl", print),
            "a subclass": lambda mlp: mlp._modules.update(gate_proj=LoRALinear(0.5)),
            "grad mode": lambda mlp: setattr(State, "grad", True),
        }
        for name, change in cases.items():
            with self.subTest(name):
                forward, mlp = self.checked()
                change(mlp)
                forward(mlp, torch.Tensor([1.0, 2.0]))
                self.assertEqual(torch.nn.Linear.module_calls, 3)
                self.assertEqual(len(self.op_calls("swiglu")), 1)
                State.grad = False
                hooks._global_forward_hooks.clear()
                hooks._global_forward_pre_hooks.clear()


class FusedMLP(Base):
    """A gated MLP where fused_mlp was exported: the whole MLP in one op call at a tuned shape, on
    its weights transposed once and kept; at any other shape the gate product as before."""

    def setUp(self):
        super().setUp()
        self.ops.results["swiglu"] = lambda g, u: torch.nn.SiLU()(g) * u
        # The MLP's own value on these one-number weights, so that the first call's check agrees.
        self.ops.results["fused_mlp"] = lambda x, wg, wu, wd: torch.Tensor(
            [v * wg.values[0] / (1 + math.exp(-v * wg.values[0])) * v * wu.values[0] * wd.values[0] for v in x.values])

    def mlp(self):
        mlp = PlainLinearMLP()
        mlp._modules["down_proj"] = torch.nn.Linear(1.0, None)
        mlp.__dict__.update(mlp._modules)
        return mlp

    def checked(self, shapes):
        t = P.Target(None, "m.LlamaMLP", "forward", "fused_mlp", "class", ("swiglu",))
        forward = R.make_replacement(t, lambda m, x: type(m).forward(m, x), self.ops, shapes={"fused_mlp": shapes})
        return forward

    def test_at_a_tuned_shape_the_mlp_is_one_fused_call_on_weights_transposed_once(self):
        mlp = self.mlp()
        for p in ("gate_proj", "up_proj"):
            mlp._modules[p]._parameters["bias"] = None
        # x of 2 values: M 1, K 2, and one gate feature: I 1.
        forward = self.checked({((1, 2, 1), "fp16")})
        x = torch.Tensor([1.0, 2.0])
        want = type(mlp).forward(mlp, x).values
        forward(mlp, x)   # the first call: compared with the class's own
        self.ops.calls.clear()
        held = mlp.__dict__.get("_autokernel_fused_weights")
        self.assertIsNotNone(held)
        out = forward(mlp, x)
        self.assertEqual([c[0] for c in self.op_calls()], ["fused_mlp"])
        for got, expected in zip(out.values, want):
            self.assertAlmostEqual(got, expected)
        self.assertIs(mlp.__dict__["_autokernel_fused_weights"], held)   # not copied again

    def test_with_fused_mlp_alone_a_qwen3_mlp_of_transformers_silu_is_one_fused_call_once_transformers_is_loaded(self):
        """transformers' Qwen3MLP is LlamaMLP's form with act_fn ACT2FN["silu"], transformers' own
        SiLUActivation (not an nn.SiLU) in transformers 5; exported: fused_mlp, no swiglu."""
        class SiLUActivation:
            def __call__(self, x):
                return torch.nn.SiLU()(x)
        mlp = self.mlp()
        mlp._modules["act_fn"] = SiLUActivation()
        mlp.__dict__.update(mlp._modules)
        for p in ("gate_proj", "up_proj"):
            mlp._modules[p]._parameters["bias"] = None
        x = torch.Tensor([1.0, 2.0])
        want = type(mlp).forward(mlp, x).values
        originals = []

        def qwen3_forward():
            t = P.Target(None, "transformers.models.qwen3.modeling_qwen3.Qwen3MLP", "forward", "fused_mlp", "class")
            return R.make_replacement(t, lambda m, x: (originals.append(x), type(m).forward(m, x))[1], self.ops,
                                      shapes={"fused_mlp": {((1, 2, 1), "fp16")}})
        # Made before transformers' activations are loaded, its SiLU is not known: the class's own forward.
        forward = qwen3_forward()
        for _ in range(2):
            forward(mlp, x)
        self.assertEqual((len(originals), self.op_calls()), (2, []))
        sys.modules["transformers.activations"] = types.SimpleNamespace(SiLUActivation=SiLUActivation)
        self.addCleanup(sys.modules.pop, "transformers.activations")
        forward = qwen3_forward()
        forward(mlp, x)   # the first call: compared with the class's own
        self.ops.calls.clear()
        out = forward(mlp, x)
        self.assertEqual(([c[0] for c in self.op_calls()], len(originals)), (["fused_mlp"], 3))
        for got, expected in zip(out.values, want):
            self.assertAlmostEqual(got, expected)

    def test_at_another_shape_or_with_a_bias_the_gate_product_serves(self):
        for name, shapes, bias in (("another shape", {((4096, 2, 1), "fp16")}, None), ("a bias", {((1, 2, 1), "fp16")}, 0.5)):
            with self.subTest(name):
                self.ops.calls.clear()
                mlp = self.mlp()
                for p in ("gate_proj", "up_proj"):
                    mlp._modules[p]._parameters["bias"] = None if bias is None else torch.Tensor([bias])
                forward = self.checked(shapes)
                forward(mlp, torch.Tensor([1.0, 2.0]))
                self.ops.calls.clear()
                forward(mlp, torch.Tensor([1.0, 2.0]))
                self.assertEqual([c[0] for c in self.op_calls()], ["swiglu"])
                self.assertNotIn("_autokernel_fused_weights", mlp.__dict__)

    def test_under_capture_weights_not_yet_transposed_are_not_made_there(self):
        mlp = self.mlp()
        for p in ("gate_proj", "up_proj"):
            mlp._modules[p]._parameters["bias"] = None
        State.capturing = True
        self.assertIsNone(R._fused_weights(mlp, *(mlp._modules[p] for p in ("gate_proj", "up_proj", "down_proj"))))
        State.capturing = False
        made = R._fused_weights(mlp, *(mlp._modules[p] for p in ("gate_proj", "up_proj", "down_proj")))
        self.assertEqual(len(made), 3)

    def test_the_tuned_shapes_come_from_the_manifest_and_a_file_of_unknown_shape_serves_any(self):
        shapes = R.tuned_shapes([
            {"type": "matmul", "files": [{"shape": "4096x2048x2048x0", "dtype": "fp16"},
                                         {"shape": "4096x6144x2048x0", "dtype": "bf16"}]},
            {"type": "fused_mlp", "shape": "", "dtype": ""}])
        self.assertEqual(shapes["matmul"], {((4096, 2048, 2048, 0), "fp16"), ((4096, 6144, 2048, 0), "bf16")})
        self.assertIsNone(shapes["fused_mlp"])


class LinearAndAttention(Base):
    """F.linear to the matmul op, causal SDPA to the flash_attention op; anything else the original's."""

    def test_a_linear_call_is_one_op_call_with_its_bias_or_none(self):
        original = Calls("original")
        linear = R.make_replacement(target("functional", "matmul"), original, self.ops)
        x, w, b = torch.Tensor([1.0, 2.0]), torch.Tensor([3.0]), torch.Tensor([0.5])
        linear(x, w, b)
        linear(x, w)
        self.assertEqual(self.op_calls(), [("matmul", (x, w, b)), ("matmul", (x, w, None))])
        self.assertEqual(original.calls, 0)

    def test_a_linear_call_that_trains_or_is_compiled_without_a_decision_runs_the_original(self):
        original = Calls("original")
        linear = R.make_replacement(target("functional", "matmul"), original, self.ops)
        State.grad = True
        linear(torch.Tensor([1.0], requires_grad=True), torch.Tensor([1.0]))
        State.grad = False
        State.compiling = True
        linear(torch.Tensor([1.0]), torch.Tensor([1.0]))
        self.assertEqual((original.calls, self.op_calls()), (2, []))
        R.set_compile_ops({"matmul"})
        linear(torch.Tensor([1.0]), torch.Tensor([1.0]))
        self.assertEqual(len(self.op_calls("matmul")), 1)

    @staticmethod
    def attention(heads=16, kv_heads=4, seq=2048, dim=128, batch=2):
        """q [B, heads, S, D] and k, v [B, kv_heads, S, D], as a decoder's projections give them."""
        return (torch.Tensor([1.0], sizes=(batch, h, seq, dim)) for h in (heads, kv_heads, kv_heads))

    def declined(self, call):
        """What the replacement said on stderr while making `call`."""
        said = io.StringIO()
        with contextlib.redirect_stderr(said):
            call()
        return said.getvalue()

    def test_causal_or_unmasked_attention_at_the_default_scale_is_one_op_call_with_its_causality(self):
        original = Calls("original")
        sdpa = R.make_replacement(target("functional", "flash_attention"), original, self.ops)
        q, k, v = self.attention(heads=16, kv_heads=16)
        sdpa(q, k, v, is_causal=True)
        sdpa(q, k, v, is_causal=True, scale=128 ** -0.5)   # transformers gives the scale: that value
        sdpa(q, k, v)                                      # no mask, not causal: every key seen
        self.assertEqual(self.op_calls(), [("flash_attention", (q, k, v, True))] * 2 + [("flash_attention", (q, k, v, False))])
        self.assertEqual(original.calls, 0)

    def test_grouped_query_heads_reach_the_op_with_enable_gqa_and_repeated_ones_as_plain_heads(self):
        original = Calls("original")
        sdpa = R.make_replacement(target("functional", "flash_attention"), original, self.ops)
        q, k, v = self.attention(heads=16, kv_heads=4)
        sdpa(q, k, v, is_causal=True, enable_gqa=True)
        # transformers' repeat_kv (a mask given, or an older torch): k and v copied to q's heads.
        q, k16, v16 = self.attention(heads=16, kv_heads=16)
        sdpa(q, k16, v16, is_causal=True)
        self.assertEqual([c[1][1].shape[1] for c in self.op_calls("flash_attention")], [4, 16])
        # Fewer kv heads without enable_gqa is an error of PyTorch's SDPA: it runs, and says it.
        said = self.declined(lambda: sdpa(q, k, v, is_causal=True))
        self.assertEqual(original.calls, 1)
        self.assertIn("k has other heads than q without enable_gqa", said)

    def test_each_call_the_kernel_does_not_take_runs_sdpa_and_says_why_once(self):
        original = Calls("original")
        sdpa = R.make_replacement(target("functional", "flash_attention"), original, self.ops)
        q, k, v = self.attention()
        cases = {"a mask (attn_mask)": dict(attn_mask=q), "dropout": dict(dropout_p=0.1, is_causal=True),
                 "a scale other than 1/sqrt(D)": dict(is_causal=True, scale=1.0, enable_gqa=True),
                 "arguments ['future_option']": dict(is_causal=True, future_option=1),
                 "is_causal is not a bool": dict(is_causal=1, enable_gqa=True)}
        for why, kwargs in cases.items():
            said = self.declined(lambda: sdpa(q, k, v, **kwargs))
            self.assertIn(f"flash_attention runs PyTorch's op instead: {why}", said)
            self.assertEqual(self.declined(lambda: sdpa(q, k, v, **kwargs)), "")   # said once
        q3 = torch.Tensor([1.0], sizes=(16, 2048, 128))
        self.assertIn("q or k is not [B, heads, S, D]", self.declined(lambda: sdpa(q3, q3, q3, is_causal=True)))
        self.assertEqual((original.calls, self.op_calls()), (2 * len(cases) + 1, []))

    def test_attention_that_trains_or_is_compiled_without_a_decision_runs_sdpa(self):
        original = Calls("original")
        sdpa = R.make_replacement(target("functional", "flash_attention"), original, self.ops)
        q, k, v = self.attention()
        State.grad = True
        sdpa(torch.Tensor([1.0], requires_grad=True, sizes=q.shape), k, v, is_causal=True, enable_gqa=True)
        State.grad = False
        State.compiling = True
        sdpa(q, k, v, is_causal=True, enable_gqa=True)
        self.assertEqual((original.calls, self.op_calls()), (2, []))
        R.set_compile_ops({"flash_attention"})
        sdpa(q, k, v, is_causal=True, enable_gqa=True)
        self.assertEqual(self.op_calls(), [("flash_attention", (q, k, v, True))])

    def test_transformers_causal_mask_decided_under_capture_reaches_the_op_as_causal(self):
        G = fake_torch.package_module("_graphs")
        masking = types.ModuleType("transformers.masking_utils")
        masking._ignore_causal_mask_sdpa = lambda padding_mask, q_length, kv_length, q_offset, kv_offset, \
            local_attention_size=None: not State.capturing and padding_mask is None and q_length == kv_length
        masking.find_packed_sequence_indices = lambda position_ids: None
        original = Calls("original")
        sdpa = R.make_replacement(target("functional", "flash_attention"), original, self.ops)
        q, k, v = self.attention()

        def layer():   # a causal transformers model's attention: the mask unless the decision skips it
            skip = masking._ignore_causal_mask_sdpa(None, 2048, 2048, 0, 0, None)
            mask = None if skip else torch.Tensor([1.0], sizes=(2, 1, 2048, 2048))
            return sdpa(q, k, v, attn_mask=mask, is_causal=mask is None, enable_gqa=mask is None)
        State.capturing = True
        said = self.declined(layer)   # a plain capture: transformers builds its mask, SDPA runs
        self.assertEqual((original.calls, self.op_calls()), (1, []))
        self.assertIn("a mask (attn_mask)", said)
        with G.mask_decisions({"transformers.masking_utils": masking}) as decisions:
            self.assertTrue(decisions.saved)
            layer()   # capture(): the mask recognised as causal where transformers decides it
        self.assertEqual(self.op_calls(), [("flash_attention", (q, k, v, True))])

    def test_a_version_1_file_serves_causal_calls_of_one_head_count_with_its_old_op(self):
        original = Calls("original")
        sdpa = R.make_replacement(target("functional", "flash_attention"), original, self.ops,
                                  versions={"flash_attention": 1})
        q, k, v = self.attention(heads=16, kv_heads=16)
        sdpa(q, k, v, is_causal=True)
        sdpa(q, k, v, is_causal=True, scale=128 ** -0.5)
        sdpa(q, k, v)                                          # not causal: version 1 has no such kernel
        sdpa(q, k, v, attn_mask=q, is_causal=False)
        gq, gk, gv = self.attention(heads=16, kv_heads=4)
        sdpa(gq, gk, gv, is_causal=True, enable_gqa=True)      # grouped heads: version 1 has one count
        self.assertEqual(self.op_calls(), [("flash_attention", (q, k, v))] * 2)
        self.assertEqual(original.calls, 3)


class CompileDecision(unittest.TestCase):
    def scripted(self, times):
        """measure() from a table of times by enabled set; records what was measured."""
        measured = []

        def measure(enabled):
            measured.append(tuple(sorted(enabled)))
            return times[tuple(sorted(enabled))]
        return measure, measured

    def test_the_types_that_helped_alone_are_kept_when_together_they_beat_compile_alone(self):
        measure, measured = self.scripted({("rmsnorm",): 9.0, ("softmax",): 10.5, ("rotary_embedding",): 9.5,
                                           ("rmsnorm", "rotary_embedding"): 8.7})
        enabled, record = D.choose(["softmax", "rmsnorm", "rotary_embedding"], measure, baseline_ms=10.0)
        self.assertEqual(enabled, {"rmsnorm", "rotary_embedding"})
        self.assertEqual(record["helped"], ["rmsnorm", "rotary_embedding"])
        self.assertEqual(record["together_ms"], 8.7)
        # compile alone was measured before: one compile per type and one for the set, no more
        self.assertEqual(measured, [("rmsnorm",), ("rotary_embedding",), ("softmax",), ("rmsnorm", "rotary_embedding")])

    def test_types_slower_together_than_one_of_them_alone_leave_that_one(self):
        # Qwen2 in bf16 on an H100: rotary alone 8.089 ms, the three together 8.428, compile 8.667.
        measure, measured = self.scripted({("rmsnorm",): 8.416, ("rotary_embedding",): 8.089, ("swiglu",): 8.526,
                                           ("rmsnorm", "rotary_embedding", "swiglu"): 8.428})
        enabled, record = D.choose(["rmsnorm", "rotary_embedding", "swiglu"], measure, baseline_ms=8.667)
        self.assertEqual(enabled, {"rotary_embedding"})
        self.assertEqual((record["enabled"], record["together_ms"]), (["rotary_embedding"], 8.428))
        self.assertEqual(len(measured), 4)   # nothing measured again to decide

    def test_a_set_slower_together_than_compile_alone_leaves_the_best_alone(self):
        measure, _ = self.scripted({("a",): 9.0, ("b",): 9.5, ("a", "b"): 10.2})
        enabled, record = D.choose(["a", "b"], measure, baseline_ms=10.0)
        self.assertEqual(enabled, {"a"})
        self.assertEqual(record["enabled"], ["a"])

    def test_one_type_that_helped_is_not_measured_again(self):
        measure, measured = self.scripted({(): 10.0, ("a",): 9.0, ("b",): 11.0})
        enabled, record = D.choose(["a", "b"], measure)
        self.assertEqual(enabled, {"a"})
        self.assertEqual(measured, [(), ("a",), ("b",)])
        self.assertEqual(record["baseline_ms"], 10.0)

    def test_a_gain_within_the_noise_margin_is_no_gain(self):
        measure, measured = self.scripted({("a",): 9.95})
        enabled, _ = D.choose(["a"], measure, baseline_ms=10.0, min_gain=0.01)
        self.assertEqual(enabled, frozenset())
        self.assertEqual(measured, [("a",)])

    def test_nothing_to_decide_measures_nothing(self):
        measure, measured = self.scripted({})
        self.assertEqual(D.choose([], measure, baseline_ms=10.0)[0], frozenset())
        self.assertEqual(measured, [])

    def test_set_compile_ops_replaces_the_whole_decision(self):
        R.set_compile_ops(["a", "b"])
        R.set_compile_ops(["c"])
        self.assertEqual(R.COMPILE_OPS, {"c"})


class CrossEntropyReplacement(unittest.TestCase):
    """F.cross_entropy goes to the op only for the calls it computes: ignore_index -100 (ignored rows
    handled by a version-2 kernel, checked by a version-1 op), no weights or smoothing, 'mean' or 'none'."""

    class Logits:
        shape = (4, 10)

        def dim(self):
            return 2

    class Targets:
        def dim(self):
            return 1

    def call(self, **kwargs):
        calls = []

        class Ops:
            def cross_entropy(self, input, target):
                calls.append("op")
                return "loss", "mean"

        def original(*args):
            calls.append("original")
            return "pytorch"

        out = R._cross_entropy(Ops(), original)(self.Logits(), self.Targets(), **kwargs)
        return calls, out

    def test_the_default_ignore_index_goes_to_the_op_in_one_call(self):
        self.assertEqual(self.call(), (["op"], "mean"))
        self.assertEqual(self.call(ignore_index=-100, reduction="none"), (["op"], "loss"))

    def test_another_ignore_index_or_reduction_runs_the_original(self):
        for kwargs in ({"ignore_index": -1}, {"ignore_index": 3}, {"reduction": "sum"}, {"weight": object()},
                       {"label_smoothing": 0.1}):
            with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                self.assertEqual(self.call(**kwargs), (["original"], "pytorch"))


if __name__ == "__main__":
    unittest.main()
