"""The CUDA-graph mode's parts that need no GPU (daemon/export/package/autokernel_ops/_graphs.py), on
a stand-in torch: the causal decision transformers' masking makes under a capture without a padding
mask, installed only for the block and only where the function is the one it was written for; the
key a graph is captured for; inputs that cannot be captured. Run by ctest:
python3 -m unittest graphs_test.py"""
import types
import unittest

import fake_torch

torch = fake_torch.install()
G = fake_torch.package_module("_graphs")
State = torch.State


def masking_module():
    """transformers.masking_utils as far as the decision goes: its function refuses every skip
    under tracing (a CUDA stream capture included), as transformers 5's does."""
    module = types.ModuleType("transformers.masking_utils")
    module.calls = []

    def _ignore_causal_mask_sdpa(padding_mask, q_length, kv_length, q_offset, kv_offset, local_attention_size=None):
        module.calls.append((padding_mask, q_length, kv_length))
        if State.capturing:
            return False
        return padding_mask is None and q_length == kv_length
    module._ignore_causal_mask_sdpa = _ignore_causal_mask_sdpa
    return module


class CausalUnderCapture(unittest.TestCase):
    def setUp(self):
        State.capturing = State.compiling = False
        self.masking = masking_module()
        self.modules = {"transformers.masking_utils": self.masking}
        self.original = self.masking._ignore_causal_mask_sdpa

    def decide(self, *args):
        return self.masking._ignore_causal_mask_sdpa(*args)

    def test_under_capture_a_call_without_padding_mask_is_decided_by_the_lengths_as_eagerly(self):
        with G.causal_sdpa_under_capture(self.modules) as installed:
            self.assertTrue(installed)
            State.capturing = True
            self.assertTrue(self.decide(None, 2048, 2048, 0, 0, None))     # a prefill: is_causal=True
            self.assertTrue(self.decide(None, 1, 2049, 2048, 0, None))     # one query
            self.assertFalse(self.decide(None, 16, 4096, 4080, 0, None))   # a chunk after a cache: the mask
            self.assertFalse(self.decide(None, 2048, 2048, 0, 0, 1024))    # a local window the keys reach
        self.assertEqual(self.masking.calls, [])   # none of them needed transformers' own decision

    def test_a_padding_mask_eager_calls_and_compilation_keep_transformers_own_decision(self):
        mask = torch.Tensor([1.0, 1.0])
        with G.causal_sdpa_under_capture(self.modules):
            State.capturing = True
            self.assertFalse(self.decide(mask, 2048, 2048, 0, 0, None))
            State.capturing = False
            self.assertTrue(self.decide(None, 2048, 2048, 0, 0, None))
            State.capturing = State.compiling = True
            self.assertFalse(self.decide(None, 2048, 2048, 0, 0, None))
        self.assertEqual(len(self.masking.calls), 3)

    def test_the_function_comes_back_after_the_block_even_when_it_raises(self):
        with self.assertRaises(RuntimeError), G.causal_sdpa_under_capture(self.modules):
            raise RuntimeError("the capture failed")
        self.assertIs(self.masking._ignore_causal_mask_sdpa, self.original)

    def test_without_transformers_or_with_another_signature_nothing_is_installed(self):
        with G.causal_sdpa_under_capture({}) as installed:
            self.assertFalse(installed)
        self.masking._ignore_causal_mask_sdpa = lambda padding_mask, q_length, kv_length: False
        changed = self.masking._ignore_causal_mask_sdpa
        with G.causal_sdpa_under_capture(self.modules) as installed:
            self.assertFalse(installed)
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
