"""Where verify.py says a step's GPU time goes (daemon/export/package/autokernel_ops/_timing.py),
from scripted profiler traces: the busy time is the union of the GPU's work, and the kernels are
ranked by their time per step. Run by ctest: python3 -m unittest timing_test.py"""
import contextlib
import time
import unittest
import warnings

import fake_torch

torch = fake_torch.install()
T = fake_torch.package_module("_timing")


class FakeCuda:
    """torch.cuda as host_ms and host_syncs use it: a sync debug mode that warns while set."""
    def __init__(self):
        self.mode, self.synchronized = 0, 0

    def synchronize(self):
        self.synchronized += 1

    def set_sync_debug_mode(self, mode):
        self.mode = mode

    def item(self):  # what a step calls that makes the CPU wait for the GPU
        if self.mode == "warn":
            warnings.warn("called a synchronizing CUDA operation\n  (a second line)")
        return 1


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


class HostSide(unittest.TestCase):
    def setUp(self):
        self.cuda, self.saved = FakeCuda(), (torch.cuda, getattr(torch, "inference_mode", None))
        torch.cuda, torch.inference_mode = self.cuda, contextlib.nullcontext

    def tearDown(self):
        torch.cuda, torch.inference_mode = self.saved

    def test_the_cpu_time_of_a_step_is_taken_with_the_queue_drained_before_each(self):
        calls = []
        row = T.host_ms(lambda: (calls.append(1), time.sleep(0.002)), steps=4, warmup=2)
        self.assertEqual(len(calls), 6)
        self.assertEqual(row["steps"], 4)
        self.assertGreaterEqual(row["min_ms"], 2.0)
        self.assertGreaterEqual(self.cuda.synchronized, 4)

    def test_each_wait_for_the_gpu_in_a_step_is_named_by_its_first_line_and_the_mode_is_put_back(self):
        def step():
            warnings.warn("Synchronization debug mode is a prototype feature")  # said once, not a wait
            self.cuda.item()
            self.cuda.item()
        syncs = T.host_syncs(step)
        self.assertEqual(len(syncs), 2)
        self.assertTrue(all(s.startswith(__file__ + ":") and s.endswith(": called a synchronizing CUDA operation") for s in syncs), syncs)
        self.assertEqual(self.cuda.mode, 0)
        self.assertEqual(T.host_syncs(lambda: None), [])


if __name__ == "__main__":
    unittest.main()
