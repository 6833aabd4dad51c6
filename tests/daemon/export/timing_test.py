"""Where verify.py says a step's GPU time goes (daemon/export/package/autokernel_ops/_timing.py),
from scripted profiler traces: the busy time is the union of the GPU's work, and the kernels are
ranked by their time per step. Run by ctest: python3 -m unittest timing_test.py"""
import unittest

import fake_torch

fake_torch.install()
T = fake_torch.package_module("_timing")


def kernel(ts, dur, cat="kernel"):
    return {"ph": "X", "cat": cat, "name": "k", "ts": ts, "dur": dur}


class GpuIdle(unittest.TestCase):
    def test_overlapping_kernels_count_once(self):
        self.assertEqual(T.kernel_union_us([(0, 10), (5, 12), (20, 25), (21, 22)]), 17)


    def test_the_busy_time_is_the_union_of_the_gpu_work_per_step_and_kernels_are_ranked_by_time(self):
        events = [kernel(0, 10), kernel(5, 10), kernel(100, 40, "gpu_memcpy"), kernel(200, 20),
                  # CPU ops and annotations are not GPU work
                  {"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 0, "dur": 500},
                  {"ph": "X", "cat": "gpu_user_annotation", "name": "step", "ts": 0, "dur": 500}]
        events[1]["name"] = "norm"
        busy = T.gpu_busy_per_step(events, 2, top=2)
        self.assertEqual(busy["busy_us"], (15 + 40 + 20) / 2)
        self.assertEqual(busy["kernels"], [{"name": "k", "us": 35.0, "calls": 1.5}, {"name": "norm", "us": 5.0, "calls": 0.5}])
        self.assertEqual(busy["kernel_us"], 40.0)

    def test_a_trace_without_gpu_work_is_busy_for_no_time(self):
        self.assertEqual(T.gpu_busy_per_step([{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 0, "dur": 5}], 1)["busy_us"], 0)


if __name__ == "__main__":
    unittest.main()
