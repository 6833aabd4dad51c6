"""The pure logic of the reference process (harness/reference_server.py): the globals set per
shape, the check of the module's tensors against the spec, the pool layout's check, the mismatch
message, and the protocol loop on a stand-in server. No torch needed.
Run by ctest: python3 -m unittest reference_server_test.py"""
import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../harness"))
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

    def test_the_atol_grows_with_the_outputs_magnitude_only_for_inputs_scaled_up(self):
        self.assertEqual(R.absolute_tolerance(1e-4, 64.0, 250.0), 1e-4 * 250.0)
        self.assertEqual(R.absolute_tolerance(1e-4, 64.0, 0.5), 1e-4)           # never below the spec's
        self.assertEqual(R.absolute_tolerance(1e-4, 1.0, 250.0), 1e-4)          # plain inputs: the spec's
        self.assertEqual(R.absolute_tolerance(1e-4, 1 / 64, 250.0), 1e-4)       # scaled down: the spec's
        self.assertEqual(R.absolute_tolerance(1e-4, 64.0, float("inf")), 1e-4)

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

        map_pool = baseline = hello

    def run_lines(self, *lines):
        out = io.StringIO()
        R.serve(self.Stand(), [json.dumps(x) if not isinstance(x, str) else x for x in lines], out)
        return [json.loads(line) for line in out.getvalue().splitlines()]

    def test_every_reply_has_ok_and_failures_name_the_op(self):
        replies = self.run_lines({"op": "hello"}, {"op": "load"}, {"op": "nope"}, "not json", {"op": "quit"},
                                 {"op": "hello"})
        self.assertEqual(replies[0], {"torch": "none", "ok": True})
        self.assertEqual(replies[1], {"ok": False, "error": "load: the reference of t has no Model"})
        self.assertIn("unknown op 'nope'", replies[2]["error"])
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


if __name__ == "__main__":
    unittest.main()
