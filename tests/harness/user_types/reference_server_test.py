"""The pure logic of the reference process (harness/user_types/reference_server.py): the globals set per
shape, the check of the module's tensors against the spec, the pool layout's check, the mismatch
message, and the protocol loop on a stand-in server. No torch needed.
Run by ctest: python3 -m unittest reference_server_test.py"""
import io
import json
import math
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../harness/user_types"))
import reference_server as R  # noqa: E402

SPEC = [
    {"name": "x", "role": "input", "shape": ["batch_size", "dim"], "type": "float"},
    {"name": "labels", "role": "input", "shape": ["batch_size"], "type": "int64"},
    {"name": "fc_weight", "role": "parameter", "shape": ["dim", "dim"], "type": "float"},
    {"name": "fc_bias", "role": "parameter", "shape": ["dim"], "type": "float"},
    {"name": "scale", "role": "buffer", "shape": [1, "dim"], "type": "float"},
    {"name": "out", "role": "output", "shape": ["batch_size", "dim"], "type": "float"},
]
DIMS = {"batch_size": 4, "dim": 8}


def actual():
    return [{"role": "input", "name": "x", "type": "float", "shape": [4, 8]},
            {"role": "input", "name": "labels", "type": "int64", "shape": [4]},
            {"role": "parameter", "name": "fc.weight", "type": "float", "shape": [8, 8]},
            {"role": "parameter", "name": "fc.bias", "type": "float", "shape": [8]},
            {"role": "buffer", "name": "scale", "type": "float", "shape": [1, 8]}]


class Globals(unittest.TestCase):
    def test_dims_are_set_in_order_and_fixed_ones_as_the_spec_gives_them(self):
        self.assertEqual(R.size_globals(["batch_size", "dim"], [4, 8], {"reduce_dim": 1}),
                         {"batch_size": 4, "dim": 8, "reduce_dim": 1})

    def test_a_dim_cannot_be_overridden_by_a_fixed_global(self):
        self.assertEqual(R.size_globals(["dim"], [8], {"dim": 3})["dim"], 8)

    def test_a_shape_with_the_wrong_count_or_a_non_positive_value_is_refused(self):
        with self.assertRaisesRegex(R.Failure, "one value per dim"):
            R.dim_values(["a", "b"], [1])
        with self.assertRaisesRegex(R.Failure, "b = 0 is not a positive integer"):
            R.dim_values(["a", "b"], [1, 0])
        with self.assertRaisesRegex(R.Failure, "positive integer"):
            R.dim_values(["a"], [True])


class InputScale(unittest.TestCase):
    def test_absent_is_one_and_a_number_is_taken(self):
        self.assertEqual(R.input_scale({}), 1.0)
        self.assertEqual(R.input_scale({"scale": 64}), 64.0)
        self.assertEqual(R.input_scale({"scale": 0.015625}), 0.015625)

    def test_zero_negative_infinite_or_not_a_number_is_refused(self):
        for bad in (0, -1, float("inf"), "2", True, None):
            with self.assertRaises(R.Failure):
                R.input_scale({"scale": bad})


class TensorsAgainstSpec(unittest.TestCase):
    def test_matching_tensors_pass(self):
        self.assertIsNone(R.check_tensors(SPEC, actual(), DIMS))

    def test_parameter_names_are_torch_names_with_dots_as_underscores(self):
        a = actual()
        a[2]["name"], a[3]["name"] = "fc.bias", "fc.weight"
        self.assertIn("parameter 0 (fc_weight) is fc.bias", R.check_tensors(SPEC, a, DIMS))

    def test_a_name_the_importer_suffixed_matches_and_another_does_not(self):
        self.assertTrue(R.spec_name_of("h0", "h0_1"))
        self.assertTrue(R.spec_name_of("rnn.h0", "rnn_h0"))
        self.assertFalse(R.spec_name_of("h0", "h0_x"))
        self.assertFalse(R.spec_name_of("h0", "h1"))

    def test_a_missing_buffer_is_named_with_the_counts(self):
        msg = R.check_tensors(SPEC, actual()[:4], DIMS)
        self.assertIn("the module has 0 buffers (none) where the spec declares 1 (scale)", msg)

    def test_an_int64_where_the_spec_says_float_is_refused(self):
        a = actual()
        a[0]["type"] = "int64"
        self.assertIn("input 0 (x) is int64 in the module where the spec says float", R.check_tensors(SPEC, a, DIMS))

    def test_other_dtypes_are_named(self):
        a = actual()
        a[1]["type"] = "int32"
        self.assertIn("is int32 in the module", R.check_tensors(SPEC, a, DIMS))

    def test_a_shape_that_differs_at_this_shape_is_refused_with_both_shapes(self):
        a = actual()
        a[4]["shape"] = [8]
        self.assertIn('buffer 0 (scale) has shape [8] in the module; the spec\'s shape [1, "dim"] is [1, 8] here',
                      R.check_tensors(SPEC, a, DIMS))

    def test_a_shape_entry_that_names_no_dim_is_an_error(self):
        with self.assertRaisesRegex(R.Failure, "names no dim"):
            R.tensor_shape(["rows"], DIMS)


class Layout(unittest.TestCase):
    def layout(self):
        sizes = [4 * 8 * 4, 4 * 8, 8 * 8 * 4, 8 * 4, 8 * 4, 4 * 8 * 4]
        out, off = [], 0
        for s in sizes:
            out.append({"offset": off, "bytes": s})
            off += (s + 255) // 256 * 256
        return out, off

    def test_a_layout_of_each_tensors_size_passes(self):
        layout, total = self.layout()
        R.check_layout(SPEC, layout, DIMS, "fp32", total)

    def test_sizes_follow_the_dtype_but_int64_stays_eight_bytes(self):
        layout, total = self.layout()
        with self.assertRaisesRegex(R.Failure, "gives x 128 bytes; at this shape in fp16 it has 64"):
            R.check_layout(SPEC, layout, DIMS, "fp16", total)

    def test_a_slot_past_the_pool_or_overlapping_another_is_refused(self):
        layout, total = self.layout()
        with self.assertRaisesRegex(R.Failure, "past the pool"):
            R.check_layout(SPEC, layout, DIMS, "fp32", total - 256)
        layout[1]["offset"] = 64
        with self.assertRaisesRegex(R.Failure, "x and labels overlap"):
            R.check_layout(SPEC, layout, DIMS, "fp32", total)


class Messages(unittest.TestCase):
    def test_the_flat_position_becomes_the_index(self):
        self.assertEqual(R.unravel(12 * 16 + 7, [20, 16]), [12, 7])
        self.assertEqual(R.unravel(5, [2, 3, 4]), [0, 1, 1])

    def test_the_message_names_the_output_the_count_and_the_worst_element(self):
        msg = R.mismatch_message("out", 3, 65536, [12, 7], 1.5, 1.25, 1e-4)
        self.assertEqual(msg, "output out: 3 of 65536 elements differ, worst at [12, 7]: got 1.5 expected 1.25 "
                              "(tolerance 0.000225 there, atol = rtol = 0.0001)")

    def test_a_scaled_up_check_says_its_atol_from_the_outputs_magnitude(self):
        msg = R.mismatch_message("out", 1, 8, [1], 0.5, 0.25, 1e-4, atol=2e-2)
        self.assertTrue(msg.endswith("(tolerance 0.020025 there, atol = 0.02 (the output's magnitude times 0.0001), "
                                     "rtol = 0.0001)"), msg)

    def test_the_atol_grows_with_the_outputs_magnitude_only_where_the_inputs_were_made_large(self):
        self.assertEqual(R.absolute_tolerance(1e-4, True, 250.0), 1e-4 * 250.0)
        self.assertEqual(R.absolute_tolerance(1e-4, True, 0.5), 1e-4)            # never below the spec's
        self.assertEqual(R.absolute_tolerance(1e-4, False, 250.0), 1e-4)         # plain inputs: the spec's
        self.assertEqual(R.absolute_tolerance(1e-4, True, float("inf")), 1e-4)

    def test_non_finite_values_read_as_such(self):
        self.assertIn("got nan expected 2.0", R.mismatch_message("y", 1, 4, [0], float("nan"), 2.0, 1e-2))

    def test_int64_inputs_outside_the_specs_range_are_named(self):
        labels = {"name": "labels", "low": 0, "high": "num_classes"}
        self.assertIsNone(R.check_int_range(labels, 0, 9, {"num_classes": 10}))
        self.assertEqual(R.check_int_range(labels, 0, 10, {"num_classes": 10}),
                         "int64 input labels holds values in [0, 10] where the spec says [0, 10)")
        self.assertIn("[-1, 3]", R.check_int_range({"name": "i", "low": 0}, -1, 3, {}))
        self.assertIsNone(R.check_int_range({"name": "i"}, -5, 5, {}))

    def test_the_median_of_an_even_count_is_the_mean_of_the_middle_two(self):
        self.assertEqual(R.median([4, 1, 3, 2]), 2.5)
        self.assertEqual(R.median([5, 1, 3]), 3)


class Protocol(unittest.TestCase):
    class Stand:
        def hello(self, req):
            return {"torch": "none"}

        def load(self, req):
            raise R.Failure("the reference of t has no Model")

        def prepare(self, req):
            return {"x": float("nan")}

        def check(self, req):
            raise KeyError("layout")

        map_pool = baseline = free = hello

    def run_lines(self, *lines):
        out = io.StringIO()
        R.serve(self.Stand(), [json.dumps(x) if not isinstance(x, str) else x for x in lines], out)
        return [json.loads(line) for line in out.getvalue().splitlines()]

    def test_every_reply_has_ok_and_failures_name_the_op(self):
        replies = self.run_lines({"op": "hello"}, {"op": "load"}, {"op": "nope"}, "not json", {"op": "quit"},
                                 {"op": "hello"})
        self.assertEqual(replies[0], {"torch": "none", "ok": True})
        self.assertEqual(replies[1], {"ok": False, "error": "load: the reference of t has no Model"})
        self.assertIn("unknown op 'nope' (hello, load, map_pool, prepare, check, baseline, free, quit)",
                      replies[2]["error"])
        self.assertIn("?: the request is not JSON", replies[3]["error"])
        self.assertEqual(replies[4], {"ok": True})
        self.assertEqual(len(replies), 5, "nothing is answered after quit")

    def test_an_unexpected_exception_and_a_non_finite_number_are_errors_not_invalid_json(self):
        stderr, sys.stderr = sys.stderr, io.StringIO()
        try:
            replies = self.run_lines({"op": "check"}, {"op": "prepare"})
        finally:
            sys.stderr = stderr
        self.assertIn("check: KeyError", replies[0]["error"])
        self.assertEqual(replies[1], {"ok": False, "error": "prepare: the reply held a non-finite number"})


class ElementRule(unittest.TestCase):
    """element_passes: the rule the chunked comparison applies, against the reference rounded to the
    output's dtype, with the overflow threshold either side of which an honest value may land."""
    FP16 = R.overflow_threshold("fp16")

    def passes(self, got, reference, expected, tolerance=1e-2, atol=None):
        return R.element_passes(got, reference, expected, tolerance, tolerance if atol is None else atol, self.FP16)

    def test_the_overflow_thresholds_are_max_plus_half_an_ulp(self):
        self.assertEqual(R.overflow_threshold("fp16"), 65520.0)
        self.assertEqual(R.overflow_threshold("bf16"), 2.0 ** 128 - 2.0 ** 119)
        self.assertEqual(R.overflow_threshold("fp32"), 2.0 ** 128 - 2.0 ** 103)

    def test_an_honest_infinity_where_the_rounded_reference_is_infinite_passes(self):
        inf = float("inf")
        self.assertTrue(self.passes(inf, 70000.0, inf))      # fp16 square of 264.6: PyTorch's fp16 gives inf too
        self.assertTrue(self.passes(-inf, -70000.0, -inf))
        self.assertFalse(self.passes(-inf, 70000.0, inf))    # the wrong sign

    def test_either_side_of_the_threshold_passes_where_the_reference_is_within_tolerance_of_it(self):
        inf = float("inf")
        self.assertTrue(self.passes(inf, 65000.0, 65024.0))   # 65000 * 1.01 reaches 65520
        self.assertFalse(self.passes(inf, 60000.0, 60000.0))  # far from it: an infinity is wrong
        self.assertTrue(self.passes(65504.0, 65530.0, inf))   # the reference rounds up, the kernel down
        self.assertFalse(self.passes(1.0, 65530.0, inf))

    def test_finite_values_compare_with_the_rounded_reference(self):
        self.assertTrue(self.passes(1.0, 1.0004, 1.0))
        self.assertTrue(self.passes(1.015, 1.0, 1.0))
        self.assertFalse(self.passes(1.03, 1.0, 1.0))

    def test_nan_passes_only_where_nan_is_expected_and_a_finite_value_never_where_infinity_is(self):
        nan, inf = float("nan"), float("inf")
        self.assertTrue(self.passes(nan, nan, nan))
        self.assertFalse(self.passes(nan, 1.0, 1.0))
        self.assertFalse(self.passes(1.0, inf, inf))
        self.assertFalse(self.passes(-inf, inf, inf))

    def test_chunks_cover_every_element_once_in_order(self):
        self.assertEqual(R.chunk_bounds(10, 4), [(0, 4), (4, 8), (8, 10)])
        self.assertEqual(R.chunk_bounds(8, 4), [(0, 4), (4, 8)])
        self.assertEqual(R.chunk_bounds(0, 4), [])


class Tallies(unittest.TestCase):
    def test_chunks_add_up_to_the_counts_the_worst_and_the_message(self):
        t = R.Tally()
        t.add(4, 1, False, 0.5, (0.4, 2, 1.5, 1.0), (0.0, 1.5), (0.0, 1.0, 1.0))
        t.add(4, 2, True, 0.75, (0.7, 5, 2.75, 2.0), (0.0, 2.75), (0.0, 2.0, 2.0))
        verdict = {"pass": True, "kernelbench_pass": True, "message": "", "max_abs_error": 0.0}
        t.judge("out", [2, 4], 1e-4, 1e-4, verdict)
        self.assertFalse(verdict["pass"])
        self.assertFalse(verdict["kernelbench_pass"])
        self.assertEqual(verdict["max_abs_error"], 0.75)
        self.assertTrue(verdict["message"].startswith("output out: 3 of 8 elements differ, worst at [1, 1]: got 2.75 "
                                                      "expected 2.0"), verdict["message"])

    def test_of_equal_worsts_the_first_stays(self):
        t = R.Tally()
        t.add(4, 1, False, 0.5, (0.5, 1, 1.0, 0.5), (0.0, 1.0), None)
        t.add(4, 1, False, 0.5, (0.5, 6, 1.0, 0.5), (0.0, 1.0), None)
        self.assertEqual(t.worst[1], 1)

    def test_one_non_finite_error_makes_the_largest_error_unknown(self):
        t = R.Tally()
        t.add(4, 0, False, 0.5, None, (0.0, 1.0), None)
        t.add(4, 1, False, None, (math.inf, 4, math.nan, 1.0), (math.nan, math.nan), None)
        verdict = {"pass": True, "kernelbench_pass": True, "message": "", "max_abs_error": 0.0}
        t.judge("y", [8], 1e-4, 1e-4, verdict)
        self.assertIsNone(verdict["max_abs_error"])
        self.assertIn("got nan", verdict["message"])

    def test_a_constant_output_fails_where_the_reference_varies_even_within_tolerance(self):
        t = R.Tally()
        t.add(1000, 0, False, 0.004, None, (0.0, 0.0), (-0.004, 0.004, 0.004))  # KernelBench's allclose passes it
        verdict = {"pass": True, "kernelbench_pass": True, "message": "", "max_abs_error": 0.0}
        t.judge("out", [1000], 1e-2, 1e-2, verdict)
        self.assertFalse(verdict["pass"])
        self.assertFalse(verdict["kernelbench_pass"])
        self.assertEqual(verdict["message"], "output out: every one of its 1000 elements is 0.0 where the reference "
                                             "ranges from -0.004 to 0.004: a constant output never passes where the "
                                             "reference is not constant")

    def test_a_constant_output_passes_where_the_reference_is_constant_or_has_one_element(self):
        for elements, expected in ((1000, (2.0, 2.0, 2.0)), (1000, (2.0, 2.00001, 2.00001)), (1, (0.0, 0.0, 0.0))):
            t = R.Tally()
            t.add(elements, 0, False, 0.0, None, (2.0, 2.0), expected)
            self.assertIsNone(R.constant_output_message("out", t, 1e-4), expected)
        t = R.Tally()
        t.add(8, 0, False, 0.0, None, (0.0, 1.0), (0.0, 1.0, 1.0))
        self.assertIsNone(R.constant_output_message("out", t, 1e-4), "an output that varies")


class EdgeInputs(unittest.TestCase):
    def test_each_recipe_is_a_ladder_boldest_first(self):
        huge = R.edge_ladder({"inputs": "huge"}, "fp16")
        self.assertEqual(huge[0]["specials"], [4094.0, -4094.0, math.inf, -math.inf])
        self.assertNotIn(math.inf, huge[1]["specials"])
        self.assertEqual(R.edge_ladder({"inputs": "huge"}, "fp32")[1]["specials"][0], (2.0 ** 128 - 2.0 ** 104) / 2 ** 24)
        self.assertEqual([r["exponent"] for r in R.edge_ladder({"inputs": "magnitudes"}, "fp16")], [8, 4, 2])
        self.assertEqual([r["exponent"] for r in R.edge_ladder({"inputs": "magnitudes"}, "fp32")], [20, 10, 5])
        self.assertTrue(R.edge_ladder({"inputs": "signed"}, "bf16")[0]["signs"])

    def test_the_atol_follows_the_magnitude_only_where_a_rung_makes_values_large(self):
        for name in R.EDGE_INPUTS:
            for rung in R.edge_ladder({"inputs": name}, "fp32"):
                self.assertEqual(bool(rung.get("follows_magnitude")), name in ("magnitudes", "huge"), rung["what"])

    def test_tiny_values_are_those_of_the_dtype(self):
        values = R.edge_ladder({"inputs": "tiny"}, "fp16")[0]["specials"]
        self.assertIn(2.0 ** -24, values)      # fp16's smallest subnormal
        self.assertIn(-(2.0 ** -14), values)   # its smallest normal
        self.assertIn(2.0 ** -149, R.edge_ladder({"inputs": "tiny"}, "fp32")[0]["specials"])
        self.assertIn(2.0 ** -133, R.edge_ladder({"inputs": "tiny"}, "bf16")[0]["specials"])

    def test_absent_is_get_inputs_and_an_unknown_recipe_is_refused(self):
        self.assertIsNone(R.edge_ladder({}, "fp32"))
        with self.assertRaisesRegex(R.Failure, "expected one of huge, magnitudes, signed, tiny, zeros"):
            R.edge_ladder({"inputs": "enormous"}, "fp32")


class OutOfMemory(unittest.TestCase):
    class OutOfMemoryError(RuntimeError):
        pass

    def test_out_of_memory_is_recognised_by_type_or_by_the_drivers_words(self):
        self.assertTrue(R.is_out_of_memory(self.OutOfMemoryError("CUDA out of memory. Tried to allocate 6.40 GiB")))
        self.assertTrue(R.is_out_of_memory(R.Failure("cuIpcOpenMemHandle failed: CUDA_ERROR_OUT_OF_MEMORY (2)")))
        self.assertTrue(R.is_out_of_memory(RuntimeError("CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate")))
        self.assertTrue(R.is_out_of_memory(MemoryError()))
        self.assertFalse(R.is_out_of_memory(RuntimeError("shape mismatch")))

    def test_its_reply_is_marked_the_harnesss_and_the_server_recovers(self):
        recovered = []

        class Stand:
            def prepare(self, req):
                raise OutOfMemory.OutOfMemoryError("CUDA out of memory. Tried to allocate 6.40 GiB")

            def check(self, req):
                raise R.Failure("check before a successful prepare")

            def recover(self):
                recovered.append(True)
            hello = load = map_pool = baseline = prepare

        out = io.StringIO()
        stderr, sys.stderr = sys.stderr, io.StringIO()
        try:
            R.serve(Stand(), [json.dumps({"op": "prepare"}), json.dumps({"op": "check"})], out)
        finally:
            sys.stderr = stderr
        replies = [json.loads(line) for line in out.getvalue().splitlines()]
        self.assertTrue(replies[0]["harness"])
        self.assertIn("prepare: the reference process ran out of memory (the harness's limit, not the "
                      "candidate's): OutOfMemoryError: CUDA out of memory", replies[0]["error"])
        self.assertNotIn("harness", replies[1])
        self.assertEqual(recovered, [True])


try:
    import torch as _torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


@unittest.skipUnless(HAVE_TORCH, "torch is not installed: the tensor code is exercised where it is")
class TensorChecks(unittest.TestCase):
    """The torch part of a check on CPU tensors: the chunked comparison, the rounding to the output's
    dtype and the edge inputs."""

    @classmethod
    def setUpClass(cls):
        R.setup_torch()
        cls.torch = R.torch

    def setUp(self):
        self.chunk = R.CHUNK_ELEMENTS
        self.torch.manual_seed(1234)

    def tearDown(self):
        R.CHUNK_ELEMENTS = self.chunk

    def judge(self, got, reference, dtype, tolerance, atol=None, shape=None):
        t = self.torch
        out_dtype = R.TORCH_DTYPES[dtype]
        atol = tolerance if atol is None else atol
        tally = R.compare_output(got.to(out_dtype).reshape(-1), reference.to(t.float32).reshape(-1), out_dtype,
                                 tolerance, atol)
        verdict = {"pass": True, "kernelbench_pass": True, "message": "", "max_abs_error": 0.0}
        tally.judge("out", list(shape or got.shape), tolerance, atol, verdict)
        return verdict

    def test_chunks_give_the_verdict_the_whole_output_gives(self):
        t = self.torch
        reference = t.randn(37, 53)
        got = reference.clone()
        got[3, 5] += 0.5
        got[20, 1] += 0.25
        got[30, 40] = float("nan")
        whole = self.judge(got, reference, "fp32", 1e-4)
        R.CHUNK_ELEMENTS = 7
        chunked = self.judge(got, reference, "fp32", 1e-4)
        self.assertEqual(whole, chunked)
        self.assertFalse(chunked["pass"])
        self.assertIn("3 of 1961 elements differ, worst at [30, 40]: got nan", chunked["message"])
        got[30, 40] = reference[30, 40]
        R.CHUNK_ELEMENTS = 5
        verdict = self.judge(got, reference, "fp32", 1e-4)
        self.assertIn("2 of 1961 elements differ, worst at [3, 5]", verdict["message"])
        self.assertAlmostEqual(verdict["max_abs_error"], 0.5, places=5)

    def test_an_honest_fp16_square_at_64x_passes_though_it_overflows(self):
        t = self.torch
        x = (t.randn(64, 4096) * 64).half()          # the numerical-stability stage's inputs
        reference = x.float() * x.float()            # the reference: fp32, from the rounded inputs
        got = reference.half()                       # an honest kernel: fp32 math, rounded
        self.assertTrue(bool(t.isinf(got).any()), "the test needs values past fp16's range")
        R.CHUNK_ELEMENTS = 1000
        verdict = self.judge(got, reference, "fp16", 1e-2)
        self.assertTrue(verdict["pass"], verdict["message"])
        self.assertTrue(verdict["kernelbench_pass"])
        self.assertEqual(verdict["max_abs_error"], 0.0)
        got[0, 0] = -got[0, 0] if t.isinf(got[0, 0]) else float("inf")  # one infinity where none is right
        self.assertFalse(self.judge(got, reference, "fp16", 1e-2)["pass"])

    def test_a_kernel_that_rounds_the_other_way_at_the_overflow_threshold_passes(self):
        t = self.torch
        reference = t.tensor([65519.0, 65521.0, 65530.0, -65525.0, 1.0])
        got = t.tensor([float("inf"), 65504.0, 65504.0, float("-inf"), 1.0])
        self.assertTrue(self.judge(got, reference, "fp16", 1e-2)["pass"])
        got[4] = float("inf")
        self.assertFalse(self.judge(got, reference, "fp16", 1e-2)["pass"])

    def test_a_copy_does_not_pass_as_relu_on_signed_inputs(self):
        t = self.torch
        x = t.rand(64, 4096)                                   # KernelBench's torch.rand: a copy passes here
        self.assertTrue(self.judge(x.clone(), t.relu(x), "fp32", 1e-4)["pass"])
        rung = R.edge_ladder({"inputs": "signed"}, "fp32")[0]
        signed = R.edge_values(x, rung)
        self.assertTrue(bool((signed < 0).any()) and bool((signed > 0).any()))
        self.assertTrue(t.equal(signed.abs(), x), "only signs change")
        verdict = self.judge(signed.clone(), t.relu(signed), "fp32", 1e-4)
        self.assertFalse(verdict["pass"])
        self.assertIn("elements differ", verdict["message"])

    def test_an_all_zero_output_fails_where_the_small_reference_varies(self):
        t = self.torch
        reference = t.rand(256, 64) * 1e-5                   # within atol of zero everywhere
        verdict = self.judge(t.zeros(256, 64), reference, "fp32", 1e-4)
        self.assertFalse(verdict["pass"])
        self.assertFalse(verdict["kernelbench_pass"])
        self.assertIn("every one of its 16384 elements is 0.0", verdict["message"])
        self.assertTrue(self.judge(t.full((256, 64), 3.0), t.full((256, 64), 3.0), "fp32", 1e-4)["pass"])

    def test_edge_values_reach_zeros_magnitudes_and_the_dtypes_special_values(self):
        t = self.torch
        x = t.rand(64, 1024) + 0.5
        zeros = R.edge_values(x, R.edge_ladder({"inputs": "zeros"}, "fp16")[0])
        share = float((zeros == 0).float().mean())
        self.assertTrue(0.2 < share < 0.3, share)
        self.assertTrue(bool(t.signbit(zeros[zeros == 0]).any()), "-0 among the zeros")
        big = R.edge_values(x, R.edge_ladder({"inputs": "magnitudes"}, "fp32")[0])
        ratio = (big / x).log2()
        self.assertEqual(float(ratio.min()), -20.0)
        self.assertEqual(float(ratio.max()), 20.0)
        huge = R.edge_values(x, R.edge_ladder({"inputs": "huge"}, "fp16")[0]).half()
        self.assertTrue(bool(t.isinf(huge).any()) and bool((huge.abs() == 4094.0).any()))
        changed = float((huge.float() != x.half().float()).float().mean())
        self.assertTrue(0.08 < changed < 0.17, changed)
        self.assertFalse(R.all_finite(huge.float().reshape(-1), t.float16))
        tiny = R.edge_values(x, R.edge_ladder({"inputs": "tiny"}, "fp16")[0]).half()
        self.assertTrue(bool((tiny.abs() == 2.0 ** -24).any()), "fp16's smallest subnormal survives the rounding")
        self.assertTrue(R.all_finite(tiny.float().reshape(-1), t.float16))

    def test_edge_values_stay_within_a_declared_range(self):
        t = self.torch
        x = t.rand(64, 1024)
        for name in R.EDGE_INPUTS:
            for rung in R.edge_ladder({"inputs": name}, "fp32"):
                v = R.edge_values(x, rung, 0.0, 1.0)
                self.assertTrue(bool(((v >= 0) & (v <= 1)).all()), rung["what"])
        self.assertTrue(bool((R.edge_values(x, R.edge_ladder({"inputs": "signed"}, "fp32")[0], -0.5) >= -0.5).all()))

    def test_bytes_are_compared_a_chunk_at_a_time(self):
        t = self.torch
        R.CHUNK_ELEMENTS = 3  # 24 bytes a chunk
        a = t.arange(100, dtype=t.uint8)
        b = a.clone()
        self.assertTrue(R.bytes_equal(a, b))
        b[99] = 0
        self.assertFalse(R.bytes_equal(a, b))

    def test_the_rms_counts_finite_values_only(self):
        t = self.torch
        R.CHUNK_ELEMENTS = 2
        self.assertAlmostEqual(R.finite_rms(t.tensor([3.0, float("inf"), -4.0, float("nan"), 0.0])),
                               math.sqrt(25.0 / 3))
        self.assertEqual(R.finite_rms(t.tensor([float("inf")])), 0.0)


@unittest.skipUnless(HAVE_TORCH, "torch is not installed: the tensor code is exercised where it is")
class ServerOnCpu(unittest.TestCase):
    """prepare and check of the real Server on the CPU, with a tensor standing for the worker's pool
    and the test playing the kernel."""

    @classmethod
    def setUpClass(cls):
        R.setup_torch()
        cls.torch = R.torch
        cls.device = R.DEVICE
        R.DEVICE = "cpu"

    @classmethod
    def tearDownClass(cls):
        R.DEVICE = cls.device

    def server(self, forward, draw="torch.rand(batch_size, dim)", x_range=None):
        source = ("import torch\nbatch_size = 4\ndim = 8\nclass Model(torch.nn.Module):\n"
                  "    def forward(self, x):\n        return %s\n"
                  "def get_inputs():\n    return [%s]\ndef get_init_inputs():\n    return []\n" % (forward, draw))
        x = {"name": "x", "role": "input", "shape": ["batch_size", "dim"], "type": "float"}
        if x_range:
            x["low"], x["high"] = x_range
        server = R.Server()
        server.load({"name": "t", "reference_source": source, "dims": ["batch_size", "dim"],
                     "tensors": [x, {"name": "out", "role": "output", "shape": ["batch_size", "dim"], "type": "float"}],
                     "tolerance": {"fp32": 1e-4, "fp16": 1e-2}})
        server.pool = self.torch.zeros(1024, dtype=self.torch.uint8)
        return server

    def prepare(self, server, shape=(64, 256), dtype="fp32", **extra):
        n = shape[0] * shape[1] * R.DTYPE_BYTES[dtype]
        server.pool = self.torch.zeros(2 * ((n + 255) // 256 * 256), dtype=self.torch.uint8)
        self.layout = [{"offset": 0, "bytes": n}, {"offset": (n + 255) // 256 * 256, "bytes": n}]
        self.dtype = R.TORCH_DTYPES[dtype]
        reply = server.prepare(dict({"shape": list(shape), "dtype": dtype, "layout": self.layout}, **extra))
        return reply

    def slot(self, server, i):
        return server.region(self.layout[i]).view(self.dtype)

    def run_kernel(self, server, kernel):
        x = self.slot(server, 0)
        self.slot(server, 1).copy_(kernel(x.float()).to(self.dtype))

    def test_a_copy_passes_as_relu_on_torch_rand_and_fails_on_the_signed_edge_inputs(self):
        server = self.server("torch.relu(x)")
        self.assertEqual(self.prepare(server), {})
        self.run_kernel(server, lambda x: x)
        self.assertTrue(server.check({})["pass"])
        reply = self.prepare(server, inputs="signed")
        self.assertEqual(reply["inputs"], "signed (get_inputs() with a random sign per element)")
        self.run_kernel(server, lambda x: x)
        verdict = server.check({})
        self.assertFalse(verdict["pass"])
        self.assertIn("elements differ", verdict["message"])
        self.run_kernel(server, self.torch.relu)
        self.assertTrue(server.check({})["pass"])

    def test_an_unwritten_output_fails_and_a_written_input_is_named(self):
        server = self.server("torch.relu(x)")
        self.prepare(server)
        self.assertIn("got nan", server.check({})["message"])
        self.run_kernel(server, self.torch.relu)
        self.slot(server, 0)[3] = 7.0
        self.assertEqual(server.check({})["message"], "the kernel wrote into its input x: inputs, parameters and "
                                                      "buffers are read-only")

    def test_free_drops_the_last_launchs_copies(self):
        server = self.server("torch.relu(x)")
        self.prepare(server)
        self.assertEqual(server.free({}), {})
        with self.assertRaisesRegex(R.Failure, "check before a successful prepare"):
            server.check({})

    def test_a_forward_that_works_in_place_is_judged_right_again_and_again(self):
        server = self.server("torch.relu_(x.sub_(0.5))")
        for recipe in (None, "signed"):
            self.prepare(server, **({"inputs": recipe} if recipe else {}))
            self.run_kernel(server, lambda x: self.torch.relu(x - 0.5))
            for _ in range(3):  # the determinism stage checks one drawing three times
                verdict = server.check({})
                self.assertTrue(verdict["pass"], verdict["message"])

    def test_an_honest_fp16_square_passes_at_64x(self):
        # |x| past 1 overflows at 64x (64 * 4 * 1 squared is 65536): about a third of the elements,
        # never none, where a plain randn overflowed only past 4 and a drawing had none one time in three.
        server = self.server("x * x", "torch.randn(batch_size, dim) * 4")
        self.prepare(server, dtype="fp16", scale=64)
        self.run_kernel(server, lambda x: x * x)
        self.assertTrue(bool(self.torch.isinf(self.slot(server, 1)).any()), "the test needs an overflow")
        verdict = server.check({})
        self.assertTrue(verdict["pass"], verdict["message"])

    def test_a_recipe_whose_reference_is_never_finite_falls_back_to_get_inputs(self):
        server = self.server("torch.log(x)")
        reply = self.prepare(server, inputs="signed")
        self.assertIn("get_inputs() as drawn (no rung of the signed recipe gives a finite reference)", reply["inputs"])
        self.assertTrue(bool((self.slot(server, 0) >= 0).all()))
        self.assertTrue(self.prepare(server, inputs="magnitudes")["inputs"].startswith("magnitudes (get_inputs() "
                                                                                       "times 2^k, k drawn in [-20, 20]"))

    def test_edge_inputs_stay_in_the_declared_range(self):
        server = self.server("torch.relu(x)", x_range=(0.0, 1.0))
        self.prepare(server, inputs="huge")
        x = self.slot(server, 0)
        self.assertTrue(bool(((x >= 0) & (x <= 1)).all()))
        self.assertTrue(bool((x == 1).any()), "the huge values clamped to the range's top")


class Expressions(unittest.TestCase):
    """The spec's shape expressions as the reference evaluates them (kernels_cuda/spec_expression's language)."""

    def test_floor_division_modulo_and_the_functions(self):
        names = {"height": 128, "padding": 1, "kernel_size": 3, "stride": 2}
        self.assertEqual(R.expression_value("(height + 2 * padding - kernel_size) / stride + 1", names), 64)
        self.assertEqual(R.expression_value("-7 / 2", {}), -4)
        self.assertEqual(R.expression_value("7 % 3 + ceil_div(7, 2) + min(3, 4) + max(3, 4)", {}), 1 + 4 + 3 + 4)
        self.assertEqual(R.tensor_shape(["batch", "2 * n - 1", 3], {"batch": 5, "n": 4}), [5, 7, 3])
        self.assertEqual(R.tensor_shape([], {}), [])

    def test_unknown_names_division_by_zero_overflow_and_other_syntax_are_refused(self):
        for text, words in (("rows", "names no dim"), ("n / 0", "divides by zero"), ("ceil_div(n, n - 4)", "divides by zero"),
                            ("n * 4611686018427387904 * 4", "overflows int64"), ("n ** 2", "language has not"),
                            ("abs(n)", "language has not"), ("n +", "does not parse")):
            with self.assertRaisesRegex(R.Failure, words, msg=text):
                R.expression_value(text, {"n": 4})

    def test_integer_fixed_globals_are_names_and_dims_win_over_them(self):
        self.assertEqual(R.shape_names(["n"], [8], {"n": 3, "kernel_size": 3, "scale": 0.5}), {"n": 8, "kernel_size": 3})


class ModuleAgain(unittest.TestCase):
    def test_the_importer_assigns_sizes_as_the_reference_does(self):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../daemon/kernelbench"))
        import analyse_problem as A
        source = "a = 4\nb: int = a * 2\nc = d = (a, b)\ne = 1\ne += a\nx, y = 1, 2\n"
        for overrides in ({}, {"a": 7}, {"b": 3, "e": 9}, {"d": (1,), "y": 5}):
            ours = R.module_at(source, "<t>", overrides)
            theirs = A.module_at(source, "<t>", overrides)
            self.assertEqual({k: v for k, v in ours.items() if k in "abcdexy"},
                             {k: v for k, v in theirs.items() if k in "abcdexy"}, overrides)

    def test_a_global_computed_from_a_size_follows_it(self):
        source = "out_features = 16\nbias_shape = (out_features, 1)\nn = 2\nn *= 4\na = b = 3\n"
        g = R.module_at(source, "<t>", {"out_features": 5, "n": 7, "b": 9})
        self.assertEqual(g["bias_shape"], (5, 1))
        self.assertEqual(g["n"], 7)   # the override follows every assignment, the augmented one too
        self.assertEqual((g["a"], g["b"]), (3, 9))


@unittest.skipUnless(HAVE_TORCH, "torch is not installed: the tensor code is exercised where it is")
class KernelBenchSemantics(unittest.TestCase):
    """prepare and check of problems in KernelBench's format on the CPU, the test playing the kernel:
    the module in training mode with its buffers put back before every call, sizes computed from
    others recomputed at each shape, int64 outputs compared exactly, numbers from get_inputs()."""

    @classmethod
    def setUpClass(cls):
        R.setup_torch()
        cls.torch = R.torch
        cls.device = R.DEVICE
        R.DEVICE = "cpu"

    @classmethod
    def tearDownClass(cls):
        R.DEVICE = cls.device

    def load(self, source, dims, tensors, fixed=None):
        server = R.Server()
        server.load({"name": "t", "reference_source": source, "dims": dims, "tensors": tensors,
                     "fixed": fixed or {}, "tolerance": {"fp32": 1e-4}})
        self.tensors = tensors
        return server

    def prepare(self, server, shape):
        names = R.shape_names(server.spec["dims"], list(shape), server.spec.get("fixed"))
        self.layout, offset = [], 0
        for t in self.tensors:
            n = R.numel(R.tensor_shape(t["shape"], names)) * (8 if t["type"] == "int64" else 4)
            self.layout.append({"offset": offset, "bytes": n})
            offset += (n + 255) // 256 * 256
        server.pool = self.torch.zeros(offset, dtype=self.torch.uint8)
        return server.prepare({"shape": list(shape), "dtype": "fp32", "layout": self.layout})

    def tensor(self, server, i, dtype=None):
        return server.region(self.layout[i]).view(dtype or self.torch.float32)

    BATCHNORM = ("import torch\nbatch_size = 16\nfeatures = 4\nclass Model(torch.nn.Module):\n"
                 "    def __init__(self):\n        super().__init__()\n        self.bn = torch.nn.BatchNorm1d(features)\n"
                 "    def forward(self, x):\n        return self.bn(x)\n"
                 "def get_inputs():\n    return [torch.randn(batch_size, features) * 3 + 1]\n"
                 "def get_init_inputs():\n    return []\n")
    BN_TENSORS = [{"name": "x", "role": "input", "shape": ["batch_size", "features"], "type": "float"},
                  {"name": "bn_weight", "role": "parameter", "shape": ["features"], "type": "float"},
                  {"name": "bn_bias", "role": "parameter", "shape": ["features"], "type": "float"},
                  {"name": "bn_running_mean", "role": "buffer", "shape": ["features"], "type": "float"},
                  {"name": "bn_running_var", "role": "buffer", "shape": ["features"], "type": "float"},
                  {"name": "bn_num_batches_tracked", "role": "buffer", "shape": [], "type": "int64"},
                  {"name": "out", "role": "output", "shape": ["batch_size", "features"], "type": "float"}]

    def test_batchnorm_is_judged_in_training_mode_with_its_buffers_put_back_before_every_call(self):
        t = self.torch
        server = self.load(self.BATCHNORM, ["batch_size", "features"], self.BN_TENSORS)
        self.prepare(server, (16, 4))
        x = self.tensor(server, 0).reshape(16, 4)
        batch_stats = (x - x.mean(0)) / t.sqrt(x.var(0, unbiased=False) + 1e-5)   # training mode: the batch's statistics
        self.tensor(server, 6).copy_(batch_stats.reshape(-1))
        for _ in range(3):   # the determinism stage checks one drawing three times: the same function each time
            verdict = server.check({})
            self.assertTrue(verdict["pass"], verdict["message"])
            self.assertTrue(verdict["kernelbench_pass"])
        running = (x - 0.0) / t.sqrt(t.tensor(1.0) + 1e-5)   # eval mode's running statistics (0, 1): not the function
        self.tensor(server, 6).copy_(running.reshape(-1))
        self.assertFalse(server.check({})["pass"])
        model = server.prepared["model"]
        self.assertTrue(model.training)
        # Four calls, each from the drawn buffers: the running mean moved by one momentum step, not four.
        self.assertTrue(t.allclose(model.bn.running_mean, 0.1 * x.mean(0)), "the buffers were put back before each call")
        self.assertEqual(int(model.bn.num_batches_tracked), 1)
        self.assertTrue(t.equal(self.tensor(server, 3), t.zeros(4)), "the kernel's buffer is as drawn")

    def test_a_size_computed_from_another_follows_it_at_every_shape(self):
        source = ("import torch\nbatch_size = 8\nout_features = 16\nbias_shape = (out_features,)\n"
                  "class Model(torch.nn.Module):\n    def __init__(self, bias_shape):\n        super().__init__()\n"
                  "        self.bias = torch.nn.Parameter(torch.randn(bias_shape))\n"
                  "    def forward(self, x):\n        return x + self.bias\n"
                  "def get_inputs():\n    return [torch.rand(batch_size, out_features)]\n"
                  "def get_init_inputs():\n    return [bias_shape]\n")
        tensors = [{"name": "x", "role": "input", "shape": ["batch_size", "out_features"], "type": "float"},
                   {"name": "bias", "role": "parameter", "shape": ["out_features"], "type": "float"},
                   {"name": "out", "role": "output", "shape": ["batch_size", "out_features"], "type": "float"}]
        server = self.load(source, ["batch_size", "out_features"], tensors)
        for shape in ((8, 16), (3, 33), (1, 1)):
            self.prepare(server, shape)
            x = self.tensor(server, 0).reshape(shape)
            self.tensor(server, 2).copy_((x + self.tensor(server, 1)).reshape(-1))
            verdict = server.check({})
            self.assertTrue(verdict["pass"], "%s: %s" % (shape, verdict["message"]))

    def test_an_index_output_is_compared_exactly_and_shapes_may_be_expressions(self):
        t = self.torch
        source = ("import torch\nbatch_size = 8\nn = 16\nk = 3\nclass Model(torch.nn.Module):\n"
                  "    def forward(self, x):\n        return torch.argmax(x[:, : n - k + 1], dim=1)\n"
                  "def get_inputs():\n    return [torch.rand(batch_size, n)]\ndef get_init_inputs():\n    return []\n")
        tensors = [{"name": "x", "role": "input", "shape": ["batch_size", "n"], "type": "float"},
                   {"name": "out", "role": "output", "shape": ["batch_size"], "type": "int64"}]
        server = self.load(source, ["batch_size", "n"], tensors, fixed={"k": 3})
        self.prepare(server, (8, 16))
        x = self.tensor(server, 0).reshape(8, 16)
        index = self.tensor(server, 1, t.int64)
        index.copy_(t.argmax(x[:, :14], dim=1))
        verdict = server.check({})
        self.assertTrue(verdict["pass"] and verdict["kernelbench_pass"], verdict["message"])
        index[5] += 1
        verdict = server.check({})
        self.assertFalse(verdict["pass"])
        self.assertFalse(verdict["kernelbench_pass"])
        self.assertIn("1 of 8 elements differ, worst at [5]", verdict["message"])

    def test_a_scalar_output_and_a_number_from_get_inputs(self):
        t = self.torch
        source = ("import torch\nbatch_size = 8\nclass Model(torch.nn.Module):\n"
                  "    def forward(self, x, s):\n        return torch.mean(x * s)\n"
                  "def get_inputs():\n    return [torch.rand(batch_size, 4), 3.5]\ndef get_init_inputs():\n    return []\n")
        tensors = [{"name": "x", "role": "input", "shape": ["batch_size", 4], "type": "float"},
                   {"name": "out", "role": "output", "shape": [], "type": "float"}]
        server = self.load(source, ["batch_size"], tensors)
        self.prepare(server, (8,))
        self.tensor(server, 1).copy_((self.tensor(server, 0) * 3.5).mean().reshape(1))
        verdict = server.check({})
        self.assertTrue(verdict["pass"], verdict["message"])

    def test_kernelbenchs_tolerance_is_its_checkers_for_the_dtype(self):
        self.assertEqual(R.KERNELBENCH_TOLERANCES, {"fp32": 1e-4, "fp16": 1e-2, "bf16": 1e-2})
        t = self.torch
        reference = t.ones(64)
        got = reference + 5e-4          # within 1e-2 (the old rule), not within fp32's 1e-4
        tally = R.compare_output(got, reference, t.float32, 1e-3, 1e-3)
        self.assertTrue(tally.kernelbench_bad)
        self.assertEqual(tally.bad, 0)
        tally = R.compare_output(got, reference, t.float32, 1e-3, 1e-3, kernelbench_reference=reference + 5e-4)
        self.assertFalse(tally.kernelbench_bad, "KernelBench's own reference (TF32 in convolutions) is the one it is judged by")


@unittest.skipUnless(HAVE_TORCH, "torch is not installed: the tensor code is exercised where it is")
class ImportedProblems(unittest.TestCase):
    """Each problem of tests/data/kernelbench as the importer reads it, judged by the reference
    process on the CPU at its smoke shape: its tensors are the ones the analysis found, and a kernel
    that writes the reference's own outputs passes while one that is off fails."""

    @classmethod
    def setUpClass(cls):
        R.setup_torch()
        cls.torch = R.torch
        cls.device = R.DEVICE
        R.DEVICE = "cpu"
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../daemon/kernelbench"))
        import analyse_problem as A
        A.torch = R.torch
        cls.A = A

    @classmethod
    def tearDownClass(cls):
        R.DEVICE = cls.device

    def judge(self, path):
        t = self.torch
        with open(path) as f:
            source = f.read()
        a = self.A.analyse_source(source, path)
        self.assertTrue(a["accepted"], a.get("refused"))
        tensors = []
        for key, role in (("inputs", "input"), ("parameters", "parameter"), ("buffers", "buffer"), ("outputs", "output")):
            for x in a[key]:
                entry = {"name": R.c_name(x["name"]), "role": role, "shape": x["shape"], "type": x["type"]}
                entry.update({k: x[k] for k in ("low", "high") if k in x})
                tensors.append(entry)
        server = R.Server()
        server.load({"name": "t", "reference_source": source, "dims": a["dims"], "tensors": tensors,
                     "fixed": a["fixed"], "tolerance": {"fp32": 1e-4}})
        shape = a["stages"]["smoke"]
        names = R.shape_names(a["dims"], shape, a["fixed"])
        layout, offset = [], 0
        for x in tensors:
            n = R.numel(R.tensor_shape(x["shape"], names)) * (8 if x["type"] == "int64" else 4)
            layout.append({"offset": offset, "bytes": n})
            offset += (n + 255) // 256 * 256
        server.pool = t.zeros(offset, dtype=t.uint8)
        server.prepare({"shape": shape, "dtype": "fp32", "layout": layout})
        p = server.prepared
        outputs = server.forward(p["model"], [v.clone() for role, _, v in p["kept"] if role == "input"], p["constants"],
                                 p["state"])
        slots = layout[len(p["kept"]):]
        for o, slot in zip(outputs, slots):
            server.region(slot).copy_(o.detach().contiguous().reshape(-1).view(t.uint8))
        verdict = server.check({})
        self.assertTrue(verdict["pass"] and verdict["kernelbench_pass"], "%s: %s" % (path, verdict["message"]))
        first = server.region(slots[0]).view(t.int64 if tensors[-len(slots)]["type"] == "int64" else t.float32)
        first[0] += 1          # one element off: a wrong kernel
        self.assertFalse(server.check({})["pass"], path)

    def test_every_kind_is_judged_with_the_tensors_the_importer_found(self):
        folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../data/kernelbench")
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py") and name != "dropout_training.py":
                with self.subTest(problem=name):
                    self.judge(os.path.join(folder, name))


if __name__ == "__main__":
    unittest.main()
