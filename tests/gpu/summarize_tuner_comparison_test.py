"""tests/gpu/summarize-tuner-comparison.py on made-up run folders: experiments to the best read off
results.tsv (every row of the kernel, in experiment order, to its last kept one), the paired
rebench deciding the 1% over the runs' own times, the totals and the goal, and what it says of a
run without readings or a kernel the budget cut short.
Run by ctest: python3 -m unittest summarize_tuner_comparison_test.py"""
import importlib.util
import io
import json
import os
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("summarize_tuner_comparison",
                                              os.path.join(HERE, "summarize-tuner-comparison.py"))
S = importlib.util.module_from_spec(spec)
spec.loader.exec_module(S)

HEADER = ("experiment\ttag\tkernel_type\tthroughput\tlatency_us\tpct_peak\tspeedup_vs_baseline\tcorrectness\tpeak_vram_mb\t"
          "kept\tcommit\tllm_tokens\tseconds\tdescription\tpaired_best_us\tpaired_ratio\tpaired_noise\tmove\tfailure\t"
          "predicted_us\n")


def row(n, tag, kept, us, description="tier 1: AK_THREADS 256 -> 128", correctness="PASS"):
    return (f"{n}\t{tag}\t{tag}\t1\t{us}\t0.5\t1\t{correctness}\t1\t{'yes' if kept else 'no'}\tabc\t0\t1.0\t{description}"
            f"\t0\t0\t0\tedit\t\t0\n")


CHOSEN = "tier 2: AK_VEC 1 -> 2 (first because the best is memory-bound (at 91% of DRAM peak): fewer bytes)"


class Summary(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def write(self, path, text):
        path = os.path.join(self.dir, path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def run_folder(self, order, rows, converged=None, status="converged", counters=None):
        # Rows are written out of experiment order, as a run with several GPUs may record them.
        self.write(f"{order}/results.tsv", HEADER + "".join(reversed(rows)))
        tags = sorted({r.split("\t")[1] for r in rows})
        self.write(f"{order}/state.json", json.dumps({"status": status, "kernels": [
            {"tag": t, "converged": (converged or {}).get(t, "5 reverts in a row")} for t in tags]}))
        if counters is not None:
            self.write(f"{order}/counters.tsv", "experiment\ttag\tdram_pct\tunavailable\n" + "".join(
                f"{i}\trmsnorm\t{'91' if ok else ''}\t{'' if ok else 'refused'}\n" for i, ok in enumerate(counters)))

    def two_runs(self):
        # rmsnorm: on reaches 90 µs at its 2nd row of 5; off reaches 90.5 at its 5th of 8, after a demotion.
        self.run_folder("on", [row(1, "rmsnorm", True, 100, "baseline: the starter"), row(3, "rmsnorm", True, 90, CHOSEN)] +
                        [row(n, "rmsnorm", False, 95) for n in (5, 7, 9)] +
                        [row(2, "softmax", True, 50, "baseline: the starter"), row(4, "softmax", False, 51)],
                        counters=[True, True, False])
        self.run_folder("off", [row(1, "rmsnorm", True, 100, "baseline: the starter")] +
                        [row(n, "rmsnorm", n == 4, 89 if n == 4 else 96) for n in (3, 4)] +
                        [row(5, "rmsnorm", False, 93, "the best judged again on its own fails", "FAIL"),
                         row(6, "rmsnorm", True, 90.5, "the best judged again on its own fails: demoted", "DEMOTED")] +
                        [row(n, "rmsnorm", False, 95) for n in (8, 10, 11)] +
                        [row(2, "softmax", True, 50, "baseline: the starter"), row(7, "softmax", False, 51)])

    def test_experiments_to_the_best_count_every_row_of_the_kernel_up_to_its_last_kept_one(self):
        self.two_runs()
        on, status = S.read_run(os.path.join(self.dir, "on"))
        off, _ = S.read_run(os.path.join(self.dir, "off"))
        self.assertEqual(status, "converged")
        self.assertEqual((on["rmsnorm"]["to_best"], on["rmsnorm"]["experiments"], on["rmsnorm"]["best_us"]), (2, 5, 90.0))
        self.assertEqual(on["rmsnorm"]["chosen"], 1)
        # The demoted row settles off's best: its 5th row, at the demoted-to time.
        self.assertEqual((off["rmsnorm"]["to_best"], off["rmsnorm"]["experiments"], off["rmsnorm"]["best_us"]), (5, 8, 90.5))
        self.assertEqual((off["softmax"]["to_best"], off["softmax"]["experiments"]), (1, 2))

    def test_the_runs_own_times_decide_the_one_percent_without_a_rebench_and_the_paired_ratio_with_one(self):
        self.two_runs()
        on, _ = S.read_run(os.path.join(self.dir, "on"))
        off, _ = S.read_run(os.path.join(self.dir, "off"))
        lines, totals = S.compare(on, off, {})
        rms = next(l for l in lines if l["tag"] == "rmsnorm")
        self.assertEqual(rms["by"], "runs")
        self.assertAlmostEqual(rms["slower"], 90 / 90.5 - 1)
        self.assertTrue(rms["within"])
        self.assertAlmostEqual(rms["ratio"], 2 / 5)
        self.assertEqual((totals["to_best_on"], totals["to_best_off"]), (3, 6))
        self.assertTrue(totals["goal"])
        # Benched again beside each other, on's best is 1.5% slower: not within 1%, so no goal.
        lines, totals = S.compare(on, off, {"rmsnorm": (1.015, 0.002)})
        rms = next(l for l in lines if l["tag"] == "rmsnorm")
        self.assertEqual((rms["by"], rms["within"]), ("paired", False))
        self.assertFalse(totals["all_within"])
        self.assertFalse(totals["goal"])

    def test_fewer_than_a_fifth_saved_is_no_goal_even_with_every_best_within(self):
        self.run_folder("on", [row(1, "reduce", True, 10, "baseline"), row(2, "reduce", False, 11),
                               row(3, "reduce", False, 11), row(4, "reduce", True, 9)])
        self.run_folder("off", [row(1, "reduce", True, 10, "baseline"), row(2, "reduce", False, 11),
                                row(3, "reduce", False, 11), row(4, "reduce", False, 11), row(5, "reduce", True, 9)])
        on, _ = S.read_run(os.path.join(self.dir, "on"))
        off, _ = S.read_run(os.path.join(self.dir, "off"))
        _, totals = S.compare(on, off, {})
        self.assertTrue(totals["all_within"])
        self.assertAlmostEqual(totals["ratio"], 4 / 5)   # exactly 20% fewer: met
        self.assertTrue(totals["goal"])
        self.run_folder("on", [row(1, "reduce", True, 10, "baseline")] + [row(n, "reduce", n == 5, 9 if n == 5 else 11)
                                                                          for n in range(2, 6)] + [row(6, "reduce", False, 9)])
        on, _ = S.read_run(os.path.join(self.dir, "on"))
        _, totals = S.compare(on, off, {})
        self.assertEqual(totals["ratio"], 1.0)
        self.assertFalse(totals["goal"])

    def test_the_rebench_is_read_by_the_on_files_name_and_only_from_a_clean_pairing(self):
        lines = [{"file": "/out/tuner-comparison/on/kernels/rmsnorm.cu", "correctness": "PASS",
                  "paired": {"pairs": 40, "ratio": 0.995, "noise": 0.003}},
                 {"file": "/out/tuner-comparison/on/kernels/softmax.cu", "correctness": "PASS",
                  "paired": {"pairs": 40, "ratio": 0.9, "noise": 0.003, "best_failure": "wrong output"}},
                 {"file": "/out/tuner-comparison/on/kernels/reduce.cu", "correctness": "FAIL"},
                 {"file": "/out/tuner-comparison/off/kernels/layernorm.cu", "correctness": "PASS",
                  "paired": {"pairs": 40, "ratio": 0.5, "noise": 0.003}}]
        self.write("rebench.jsonl", "".join(json.dumps(l) + "\n" for l in lines) + "not json\n")
        self.assertEqual(S.paired(self.dir), {"rmsnorm": (0.995, 0.003)})

    def test_the_table_says_which_kernels_the_budget_cut_short_and_a_run_without_readings(self):
        self.two_runs()
        self.run_folder("on", [row(1, "rmsnorm", True, 100, "baseline"), row(2, "rmsnorm", True, 90)] +
                        [row(3, "softmax", True, 50, "baseline")], converged={"softmax": ""}, status="budget spent",
                        counters=[False, False, False])
        out = io.StringIO()
        with redirect_stdout(out):
            S.main(self.dir)
        text = out.getvalue()
        self.assertIn("| rmsnorm | 90.00 | 2 (2) | 90.50 | 5 (8) | 0.40 | -0.55% (runs) | yes | 0 |", text)
        self.assertIn("| softmax | 50.00 | 1 (1) | 50.00 | 1 (2) | 1.00 | +0.00% (runs) | yes | 0 | not converged / 5 reverts in a row |",
                      text)
        self.assertIn("on 3, off 6 (ratio 0.50, 50.0% fewer)", text)
        # softmax's run ended before it converged: nothing is decided.
        self.assertIn("Goal (every best within 1% in at least 20% fewer experiments): not met (1 kernels did not converge).",
                      text)
        self.assertIn("Runs ended: on budget spent, off converged.", text)
        self.assertIn("Counters in the on run: 0 of 3 judged experiments had readings.", text)
        self.assertIn("The on run had no readings", text)
        self.assertIn("Not converged when its run ended (the comparison of these is incomplete): softmax.", text)

    def test_a_missing_run_is_named(self):
        self.two_runs()
        os.remove(os.path.join(self.dir, "off", "results.tsv"))
        with self.assertRaises(SystemExit) as e:
            S.main(self.dir)
        self.assertIn("no off/results.tsv", str(e.exception.code))


if __name__ == "__main__":
    unittest.main()
