"""The GPU idle time verify.py reports (daemon/export/package/autokernel_ops/_timing.py), from
scripted profiler traces: the idle time inside each step is its span on the GPU minus the union of
its kernels. Run by ctest: python3 -m unittest timing_test.py"""
import unittest

import fake_torch

fake_torch.install()
T = fake_torch.package_module("_timing")


def kernel(ts, dur, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": "k", "ts": ts, "dur": dur}


def step(ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": "step", "ts": ts, "dur": dur}


class GpuIdle(unittest.TestCase):
    def test_overlapping_kernels_count_once(self):
        self.assertEqual(T.kernel_union_us([(0, 10), (5, 12), (20, 25), (21, 22)]), 17)

    def test_the_idle_time_is_the_gaps_between_a_steps_kernels_not_before_or_after_them(self):
        events = [step(0, 100), kernel(10, 20), kernel(40, 10), kernel(50, 5, "gpu_memcpy"),
                  step(200, 100), kernel(210, 30), kernel(240, 30),
                  # the GPU side of a record_function range is not a step of its own
                  {"ph": "X", "cat": "gpu_user_annotation", "name": "step", "ts": 5, "dur": 400}]
        per_step = T.gpu_idle_per_step(events, "step")
        self.assertEqual(per_step, [{"span_us": 45, "busy_us": 35, "idle_us": 10},
                                    {"span_us": 60, "busy_us": 60, "idle_us": 0.0}])

    def test_a_kernel_belongs_to_the_step_whose_range_holds_its_start(self):
        events = [step(0, 50), kernel(40, 30), step(100, 50), kernel(110, 10), kernel(500, 10)]
        per_step = T.gpu_idle_per_step(events, "step")
        self.assertEqual([s["busy_us"] for s in per_step], [30, 10])

    def test_a_step_without_kernels_is_left_out(self):
        self.assertEqual(T.gpu_idle_per_step([step(0, 10)], "step"), [])


if __name__ == "__main__":
    unittest.main()
