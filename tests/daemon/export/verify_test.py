"""The model runner behind `autokernel verify` (daemon/export/package/autokernel_ops/verify.py), the
parts that need no GPU: how its measurements put wrappers in front of the patched attributes and
take them away. Run by ctest: python3 -m unittest verify_test.py"""
import sys
import time
import types
import unittest

import fake_torch

fake_torch.install()
V = fake_torch.package_module("verify")
P = fake_torch.package_module("_patch")


def patched_module():
    """A module whose helper is patched: (module, Patches, the original, the replacement)."""
    module = types.ModuleType("m")
    original, replacement = (lambda: "original"), (lambda: "replacement")
    module.helper = original
    patches = P.Patches().apply([P.Target(module, "m", "helper", "rmsnorm", "function")], lambda t, o: replacement)
    return module, patches, original, replacement


class Wrapping(unittest.TestCase):
    def test_a_wrapper_sees_what_is_installed_and_the_original_and_leaves_the_replacement_after(self):
        module, patches, original, replacement = patched_module()
        seen = []
        with V.wrapping(patches, lambda t, current, orig: (seen.append((t.name, current, orig)), lambda: "wrapped")[1]):
            self.assertEqual(module.helper(), "wrapped")
        self.assertEqual(seen, [("m.helper", replacement, original)])
        self.assertIs(module.helper, replacement)

    def test_what_was_installed_comes_back_when_the_block_raises(self):
        module, patches, _, replacement = patched_module()
        with self.assertRaises(RuntimeError), V.wrapping(patches, lambda t, current, orig: None):
            raise RuntimeError("a step failed")
        self.assertIs(module.helper, replacement)

    def test_unpatched_puts_the_original_in_place_for_the_block_and_wrappers_nest_inside_it(self):
        module, patches, original, replacement = patched_module()
        with V.unpatched(patches):
            self.assertIs(module.helper, original)
            with V.wrapping(patches, lambda t, current, orig: (lambda: "around " + current())):
                self.assertEqual(module.helper(), "around original")
            self.assertIs(module.helper, original)
        self.assertIs(module.helper, replacement)


class InModelCpuTime(unittest.TestCase):
    def test_a_replaced_function_called_inside_another_counts_in_the_outer_ones_step_time_only(self):
        import contextlib
        torch = sys.modules["torch"]
        torch.inference_mode = contextlib.nullcontext
        synced = []
        torch.cuda.synchronize = lambda: synced.append(1)
        module = types.ModuleType("m")
        clock, real_clock = [0.0], time.perf_counter
        V.time.perf_counter = lambda: clock[0]  # the time module itself: put back below

        def inner():
            clock[0] += 2e-6
            return "inner"

        def outer():
            clock[0] += 1e-6
            module.inner()
            return module.inner()
        module.inner, module.outer = inner, outer
        patches = P.Patches().apply([P.Target(module, "m", "inner", "rmsnorm", "function"),
                                     P.Target(module, "m", "outer", "swiglu", "function")], lambda t, o: o)
        try:
            times = V.in_model_cpu_us(patches, lambda: module.outer(), (), steps=2)
        finally:
            V.time.perf_counter = real_clock
            patches.restore()
        self.assertEqual(len(synced), 2)
        self.assertEqual(times["m.outer"]["calls_per_step"], 1)
        self.assertAlmostEqual(times["m.outer"]["us_per_step"], 5.0)
        self.assertAlmostEqual(times["m.inner"]["calls_per_step"], 2)
        self.assertAlmostEqual(times["m.inner"]["us_per_call"], 2.0)
        self.assertEqual(times["m.inner"]["us_per_step"], 0.0)


if __name__ == "__main__":
    unittest.main()
