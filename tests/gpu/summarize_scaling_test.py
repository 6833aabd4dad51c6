"""tests/gpu/summarize-scaling.py on a made-up folder of two legs: the busy window, experiments per
hour, reverts per best and after the last one, stale verdicts and the bests benched again.
Run by ctest: python3 -m unittest summarize_scaling_test.py"""
import importlib.util
import io
import json
import os
import tarfile
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("summarize_scaling", os.path.join(HERE, "summarize-scaling.py"))
S = importlib.util.module_from_spec(spec)
spec.loader.exec_module(S)

HEADER = ("experiment\ttag\tkernel_type\tthroughput\tlatency_us\tpct_peak\tspeedup_vs_baseline\tcorrectness\tpeak_vram_mb\tkept\t"
          "commit\tllm_tokens\tseconds\tdescription\tpaired_best_us\tpaired_ratio\tpaired_noise\tmove\tfailure\n")


def row(n, tag, kept, us, seconds=1.0, correctness="PASS", description="a move"):
    return f"{n}\t{tag}\trmsnorm\t1\t{us}\t0.5\t1\t{correctness}\t1\t{'yes' if kept else 'no'}\tabc\t0\t{seconds}\t{description}\t0\t0\t0\tknob\t\n"


def log_line(t, n, tag, gpu, kept):
    stamp = f"2026-11-24 08:00:{t:06.3f}"
    where = f" [GPU {gpu}]" if gpu is not None else ""
    return f"{stamp} info  [1] experiment {n} {tag}{where}: a move: PASS 10.00 us -> {'kept' if kept else 'reverted'}\n"


class Summary(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def one_gpu_leg(self):
        # a: the starter, one revert, a keep, two reverts; b: the starter, then five reverts.
        plan = [(1, "a", True, 100), (2, "b", True, 50), (3, "a", False, 101), (4, "a", True, 90), (5, "a", False, 95),
                (6, "a", False, 96)] + [(7 + i, "b", False, 60) for i in range(5)]
        self.write("leg-1-results.tsv", HEADER + "".join(
            row(n, tag, kept, us, description="baseline: the starter" if n <= 2 else "a move") for n, tag, kept, us in plan))
        self.write("leg-1-daemon.log", "2026-11-24 08:00:00.000 info  [1] run scaling-1\n" +
                   "".join(log_line(float(n), n, tag, None, kept) for n, tag, kept, _ in plan) +
                   "2026-11-24 08:00:20.000 info  [1] experiment 9 b: faster than the best it was paired with, but a newer "
                   "best was kept meanwhile: judging it again beside that one\n")
        self.write("leg-1-state.json", json.dumps({"status": "converged", "stale_verdicts": {"count": 0, "judged_again": 0},
                                                   "decisions": {"median_ms": 3.0, "max_ms": 6.0},
                                                   "gpus": [{"device": 0, "seconds": {"start": 1.0, "candidate": 8.0,
                                                                                      "no_open_kernel": 1.0}}]}))

    def test_the_gpus_time_is_summed_by_state_and_shown_as_a_share(self):
        self.one_gpu_leg()
        leg = S.leg_numbers(self.dir, 1, 12000)
        self.assertEqual(leg["gpu_time"], ({"start": 1.0, "candidate": 8.0, "no_open_kernel": 1.0}, 10.0))
        self.assertAlmostEqual(leg["candidate_s"], 1.0)   # the rows' seconds, starters left out
        text = S.markdown([leg], {})
        self.assertIn("| 1 | 10.0 | 0.0 (0.0%) | 8.0 (80.0%) |", text)
        self.assertIn("1.0 (10.0%) | 0.0 (0.0%) | 0.0 (0.0%) | 1.00 |", text)

    def test_reverts_are_counted_between_bests_and_after_the_last(self):
        self.one_gpu_leg()
        leg = S.leg_numbers(self.dir, 1, 12000)
        self.assertEqual(leg["experiments"], 11)
        self.assertEqual(leg["kept"], 1)                      # the starters are not kept steps
        self.assertEqual(leg["reverts_per_best"], 1.0)        # a: one revert before its second best
        self.assertEqual((leg["tail_reverts_mean"], leg["tail_reverts_max"]), (3.5, 5))
        self.assertEqual(leg["bests"], {"a": 90.0, "b": 50.0})
        self.assertAlmostEqual(leg["per_hour_whole"], 11 / 12 * 3600)
        self.assertAlmostEqual(leg["per_hour_rows"], 10 / 10 * 3600)   # rows at 1 s to 11 s

    def test_the_busy_window_ends_when_the_first_gpu_runs_out_of_work(self):
        # GPU 0 finishes at 2, 4, 6; GPU 1 at 3, 5, 7, 9, 11: both busy from 1 (GPU 1's first start) to 6.
        plan = [(1, 0, 2.0), (2, 1, 3.0), (3, 0, 4.0), (4, 1, 5.0), (5, 0, 6.0), (6, 1, 7.0), (7, 1, 9.0), (8, 1, 11.0)]
        self.write("leg-2-results.tsv", HEADER + "".join(row(n, "a", n == 1, 100, seconds=2.0) for n, _, _ in plan))
        self.write("leg-2-daemon.log", "2026-11-24 08:00:00.000 info  [1] run scaling-2\n" +
                   "".join(log_line(t, n, "a", gpu, n == 1) for n, gpu, t in plan))
        self.write("leg-2-state.json", json.dumps({"status": "converged", "stale_verdicts": {"count": 3, "judged_again": 1},
                                                   "noisy_verdicts": {"judged_again": 2}}))
        leg = S.leg_numbers(self.dir, 2, 12000)
        self.assertAlmostEqual(leg["busy_s"], 5.0)
        self.assertAlmostEqual(leg["per_hour_busy"], 5 / 5 * 3600)   # rows finished at 2, 3, 4, 5, 6
        self.assertEqual((leg["stale"], leg["judged_again"], leg["noisy"]), (3, 1, 2))
        self.assertIn("| 3 (1) | 2 |", S.markdown([leg], {}))

    def test_the_driver_calls_are_summed_over_a_legs_workers_and_the_longest_shown(self):
        self.one_gpu_leg()
        os.makedirs(os.path.join(self.dir, "driver-times-1"))
        header = "call\tcalls\ttotal_ms\tmax_ms\tover_1ms\n"
        self.write("driver-times-1/driver-times-gpu0-100.tsv", header + "cuMemAlloc\t700\t1800.0\t36.7\t270\n"
                   "cuMemFree\t700\t1200.0\t28.3\t209\n")
        self.write("driver-times-1/driver-times-gpu0-101.tsv", header + "cuMemAlloc\t38\t52.0\t3.1\t1\nbroken\tx\n")
        self.write("driver-times-1/notes.txt", "not a table\n")
        leg = S.leg_numbers(self.dir, 1, 12000)
        self.assertEqual(leg["driver"], {"cuMemAlloc": [738, 1852.0, 271], "cuMemFree": [700, 1200.0, 209]})
        text = S.markdown([leg], {})
        self.assertIn("| cuMemAlloc | 738, 1.85 s, 271 |", text)
        self.assertLess(text.index("| cuMemAlloc |"), text.index("| cuMemFree |"))
        self.assertNotIn("Time in the CUDA driver", S.markdown([dict(leg, driver={})], {}))

    def test_a_stages_phases_are_shown_however_short_and_the_driver_calls_only_at_the_top(self):
        leg = {"gpus": 1, "driver": {f"cuCall{i}": [1, 1000.0 - i, 0] for i in range(30)}}
        leg["driver"]["benchmark: the best compiled"] = [3, 0.5, 0]
        text = "\n".join(S.driver_table([leg]))
        self.assertIn("| benchmark: the best compiled | 3, 0.00 s, 0 |", text)
        self.assertIn("| cuCall23 |", text)
        self.assertNotIn("| cuCall24 |", text)

    def write_verdicts(self, n, verdicts):
        """leg-N-verdicts.tar with experiments/NNNN-TAG.verdict.json for each (experiment, {stage: s}, total)."""
        with tarfile.open(os.path.join(self.dir, f"leg-{n}-verdicts.tar"), "w") as tar:
            for e, stages, total in verdicts:
                path = os.path.join(self.dir, f"{e:04d}.json")
                with open(path, "w") as f:
                    json.dump({"stages": [{"name": k, "seconds": v, "passed": True} for k, v in stages.items()],
                               "total_seconds": total}, f)
                tar.add(path, arcname=f"experiments/{e:04d}-a.verdict.json")
            tar.add(os.path.join(self.dir, "leg-1-results.tsv"), arcname="experiments/notes.txt")

    def test_a_candidates_stages_are_medians_over_its_verdicts_held_against_one_gpus(self):
        self.one_gpu_leg()
        # experiment 1 is a starter: left out; 3, 4 and 5 are candidates.
        self.write_verdicts(1, [(1, {"compile": 9.0}, 9.0), (3, {"compile": 0.3, "benchmark": 0.1}, 1.0),
                                (4, {"compile": 0.5, "benchmark": 0.3}, 1.2), (5, {"compile": 0.4, "benchmark": 0.2}, 1.4)])
        one = S.leg_numbers(self.dir, 1, 12000)
        self.assertEqual(one["stages"], {"compile": 0.4, "benchmark": 0.2, "total": 1.2})
        four = dict(one, gpus=4, stages={"compile": 0.5, "benchmark": 0.3, "total": 1.5})
        text = S.markdown([one, four], {})
        self.assertIn("| compile | 0.400 | 0.500 (1.25×) |", text)
        self.assertIn("| benchmark | 0.200 | 0.300 (1.50×) |", text)
        self.assertNotIn("A candidate's stages", S.markdown([dict(one, stages={})], {}))

    def test_the_table_has_a_row_per_leg_and_the_bests_benched_again_beside_the_runs(self):
        self.one_gpu_leg()
        self.write("wall.txt", "1 12000\n")
        self.write("rebench.jsonl", json.dumps({"file": "runs/scaling-1/kernels/a.cu", "timing": {"median_us": 91.0}}) + "\n"
                   "not json\n")
        out = io.StringIO()
        with redirect_stdout(out):
            S.main(self.dir)
        text = out.getvalue()
        self.assertIn("| 1 | 11 | 12.0 | 3300 |", text)
        self.assertIn("| 0 (0) | - | 1 |", text)   # a state.json from before the noisy count: unknown, not 0
        self.assertIn("| a | 90.00 / 91.00 |", text)
        self.assertIn("| b | 50.00 / - |", text)
        self.assertNotIn("against one GPU's:", text)   # one leg: nothing to hold it against

    def test_each_legs_bests_are_held_against_one_gpus_within_half_a_percent(self):
        legs = [{"gpus": 1}, {"gpus": 4}]
        again = {(1, "a"): 100.0, (4, "a"): 100.4, (1, "b"): 50.0, (4, "b"): 51.0, (1, "c"): 20.0, (4, "c"): 19.0,
                 (1, "d"): 10.0}
        lines = S.bests_against_one(legs, ["a", "b", "c", "d"], again)
        self.assertIn("- 4 GPUs: 1 of 3 bests within 0.5% of one GPU's; slower: b +2.00%; faster: c -5.00%", lines)


if __name__ == "__main__":
    unittest.main()
