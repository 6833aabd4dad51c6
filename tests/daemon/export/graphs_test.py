"""The CUDA-graph mode's parts that need no GPU (daemon/export/package/autokernel_ops/_graphs.py), on
a stand-in torch: transformers' mask decisions under a capture (a call without a padding mask decided
by the lengths, the packing answer of the last eager step replayed), installed only for the block and
only where each function is the one it was written for; the key a graph is captured for; inputs that
cannot be captured. Run by ctest:
python3 -m unittest graphs_test.py"""
import types
import unittest

import fake_torch

torch = fake_torch.install()
G = fake_torch.package_module("_graphs")
State = torch.State


def masking_module():
    """transformers.masking_utils as far as the decisions go: each refuses under tracing (a CUDA
    stream capture included) what it decides eagerly by looking into a tensor, as transformers 5's
    do. find_packed_sequence_indices's position ids here are a list: packed when not 0, 1, 2, ..."""
    module = types.ModuleType("transformers.masking_utils")
    module.calls = []

    def _ignore_causal_mask_sdpa(padding_mask, q_length, kv_length, q_offset, kv_offset, local_attention_size=None):
        module.calls.append(("ignore", padding_mask, q_length, kv_length))
        if State.capturing:
            return False
        return padding_mask is None and q_length == kv_length

    def find_packed_sequence_indices(position_ids):
        module.calls.append(("packed", position_ids))
        packed = position_ids != list(range(len(position_ids)))
        return "mask" if State.capturing or packed else None
    module._ignore_causal_mask_sdpa = _ignore_causal_mask_sdpa
    module.find_packed_sequence_indices = find_packed_sequence_indices
    return module


class MaskDecisionsUnderCapture(unittest.TestCase):
    def setUp(self):
        State.capturing = State.compiling = False
        self.masking = masking_module()
        self.modules = {"transformers.masking_utils": self.masking}
        self.originals = (self.masking._ignore_causal_mask_sdpa, self.masking.find_packed_sequence_indices)

    def ignore(self, *args):
        return self.masking._ignore_causal_mask_sdpa(*args)

    def packed(self, position_ids):
        return self.masking.find_packed_sequence_indices(position_ids)

    def test_under_capture_a_call_without_padding_mask_is_decided_by_the_lengths_as_eagerly(self):
        with G.mask_decisions(self.modules) as d:
            self.assertEqual(set(d.saved), {"_ignore_causal_mask_sdpa", "find_packed_sequence_indices"})
            State.capturing = True
            self.assertTrue(self.ignore(None, 2048, 2048, 0, 0, None))     # a prefill: is_causal=True
            self.assertTrue(self.ignore(None, 1, 2049, 2048, 0, None))     # one query
            self.assertFalse(self.ignore(None, 16, 4096, 4080, 0, None))   # a chunk after a cache: the mask
            self.assertFalse(self.ignore(None, 2048, 2048, 0, 0, 1024))    # a local window the keys reach
        self.assertEqual(self.masking.calls, [])   # none of them needed transformers' own decision

    def test_a_release_without_q_offset_is_decided_by_the_lengths_under_capture_too(self):
        calls = []

        def _ignore_causal_mask_sdpa(padding_mask, query_length, kv_length, kv_offset, local_attention_size=None):
            calls.append(query_length)
            return not State.capturing and padding_mask is None and query_length == kv_length
        self.masking._ignore_causal_mask_sdpa = _ignore_causal_mask_sdpa
        with G.mask_decisions(self.modules) as d:
            self.assertIn("_ignore_causal_mask_sdpa", d.saved)
            State.capturing = True
            self.assertTrue(self.ignore(None, 2048, 2048, 0, None))      # a prefill: is_causal=True
            self.assertTrue(self.ignore(None, 1, 2049, 0, None))         # one query
            self.assertFalse(self.ignore(None, 16, 4096, 0, None))       # a chunk after a cache: the mask
            self.assertFalse(self.ignore(None, 2048, 2048, 0, 1024))     # a local window the keys reach
            State.capturing = False
            self.assertTrue(self.ignore(None, 8, 8, 0, None))            # eagerly: transformers' own
        self.assertEqual(calls, [8])
        self.assertIs(self.masking._ignore_causal_mask_sdpa, _ignore_causal_mask_sdpa)

    def test_a_padding_mask_eager_calls_and_compilation_keep_transformers_own_decision(self):
        mask = torch.Tensor([1.0, 1.0])
        with G.mask_decisions(self.modules):
            State.capturing = True
            self.assertFalse(self.ignore(mask, 2048, 2048, 0, 0, None))
            State.capturing = False
            self.assertTrue(self.ignore(None, 2048, 2048, 0, 0, None))
            State.capturing = State.compiling = True
            self.assertFalse(self.ignore(None, 2048, 2048, 0, 0, None))
        self.assertEqual(len(self.masking.calls), 3)

    def test_the_capture_gets_the_packing_answers_of_the_last_eager_step_call_for_call(self):
        positions, packed = [0, 1, 2, 3], [0, 1, 0, 1]
        with G.mask_decisions(self.modules) as d:
            self.assertIsNone(self.packed(positions))   # an earlier warm-up step: not recorded
            d.record()
            self.assertIsNone(self.packed(positions))
            self.assertEqual(self.packed(packed), "mask")
            d.replay()
            State.capturing = True
            self.assertIsNone(self.packed(positions))      # as eagerly: no mask, is_causal stays possible
            self.assertEqual(self.packed(packed), "mask")  # packed eagerly: transformers' own, the mask
            self.assertEqual(self.packed(positions), "mask")  # a call the warm-up did not make: transformers' own

    def test_under_compilation_packing_is_transformers_own(self):
        with G.mask_decisions(self.modules) as d:
            d.record()
            self.packed([0, 1])
            d.replay()
            State.capturing = State.compiling = True
            self.assertEqual(self.packed([0, 1]), "mask")

    def test_the_functions_come_back_after_the_block_even_when_it_raises(self):
        with self.assertRaises(RuntimeError), G.mask_decisions(self.modules):
            raise RuntimeError("the capture failed")
        self.assertEqual((self.masking._ignore_causal_mask_sdpa, self.masking.find_packed_sequence_indices), self.originals)

    def test_without_transformers_or_with_other_arguments_nothing_is_replaced(self):
        with G.mask_decisions({}) as d:
            self.assertEqual(d.saved, {})
        self.masking._ignore_causal_mask_sdpa = lambda padding_mask, q_length, kv_length: False
        changed = self.masking._ignore_causal_mask_sdpa
        with G.mask_decisions(self.modules) as d:
            self.assertEqual(set(d.saved), {"find_packed_sequence_indices"})
            self.assertIs(self.masking._ignore_causal_mask_sdpa, changed)


class Signatures(unittest.TestCase):
    def test_a_graph_is_keyed_by_each_tensors_shape_dtype_and_device_and_other_arguments_by_value(self):
        a = G.signature_of((torch.Tensor([1.0, 2.0]), 3))
        self.assertEqual(a, G.signature_of((torch.Tensor([5.0, 6.0]), 3)))
        self.assertNotEqual(a, G.signature_of((torch.Tensor([1.0, 2.0, 3.0]), 3)))
        self.assertNotEqual(a, G.signature_of((torch.Tensor([1.0, 2.0], torch.bfloat16), 3)))
        self.assertNotEqual(a, G.signature_of((torch.Tensor([1.0, 2.0]), 4)))


class Refusals(unittest.TestCase):
    def test_inputs_off_the_gpu_or_without_a_tensor_are_refused_saying_what_to_do(self):
        step = G.CapturedStep(model=lambda *a: None)
        with self.assertRaisesRegex(G.CaptureError, "not on a CUDA device: move them"):
            step.capture((torch.Tensor([1.0], device="cpu"),))
        with self.assertRaisesRegex(G.CaptureError, "hold no tensor"):
            step.capture((3,))


if __name__ == "__main__":
    unittest.main()
