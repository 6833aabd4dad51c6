"""tests/gpu/kernelbench-kinds-summary.py on made-up run folders: each problem's three served files
in order, the honest file's speedups from its verdict, fast_p over every problem (a missing one in
the denominator), the report's KernelBench section copied, and the exit status.
Run by ctest: python3 -m unittest kernelbench_kinds_summary_test.py"""
import importlib.util
import json
import os
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("kinds_summary", os.path.join(HERE, "kernelbench-kinds-summary.py"))
S = importlib.util.module_from_spec(spec)
spec.loader.exec_module(S)

HEADER = ("experiment\ttag\tkernel_type\tthroughput\tlatency_us\tpct_peak\tspeedup_vs_baseline\tcorrectness\tpeak_vram_mb\tkept\t"
          "commit\tllm_tokens\tseconds\tdescription\tpaired_best_us\tpaired_ratio\tpaired_noise\tmove\tfailure\n")


def row(n, tag, correctness, kept, us, description, failure=""):
    return (f"{n}\t{tag}\t{tag}\t1\t{us}\t0.5\t1\t{correctness}\t1\t{'yes' if kept else 'no'}\tabc\t0\t1\t{description}"
            f"\t0\t0\t0\tedit\t{failure}\n")


class KindsSummary(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.dir, "experiments"))

    def verdict(self, n, tag, eager, compile_us):
        with open(os.path.join(self.dir, "experiments", "%04d-%s.verdict.json" % (n, tag)), "w") as f:
            json.dump({"reference_us": eager, "torch_compile_us": compile_us, "kernelbench_pass": True}, f)

    def write_run(self, cheat_passes=False):
        with open(os.path.join(self.dir, "results.tsv"), "w") as f:
            f.write(HEADER)
            f.write(row(1, "kb_cumsum", "PASS", True, 100, "baseline: the starter; speedups against PyTorch eager"))
            f.write(row(2, "kb_argmax", "PASS", True, 50, "baseline: the starter; speedups against PyTorch eager"))
            f.write(row(3, "kb_cumsum", "FAIL", False, 0, "the wrong kernel for kb_cumsum", "shape sweep: wrong output"))
            f.write(row(4, "kb_argmax", "FAIL", False, 0, "the wrong kernel for kb_argmax", "edge cases: wrong output"))
            f.write(row(5, "kb_cumsum", "FAIL", False, 0, "the cheating kernel for kb_cumsum", "smoke: wrong output"))
            f.write(row(6, "kb_argmax", "PASS" if cheat_passes else "FAIL", cheat_passes, 40, "the cheating kernel for kb_argmax",
                        "" if cheat_passes else "timing: wrong timed launch"))
        self.verdict(1, "kb_cumsum", 250.0, 80.0)
        self.verdict(2, "kb_argmax", 60.0, 0.0)
        with open(os.path.join(self.dir, "report.md"), "w") as f:
            f.write("# Run\n\n## KernelBench\n\n| p | vs eager (ours) |\n| 1 | 2/2 (100%) |\n\n## Kernels\n\nmore\n")

    def test_every_problem_as_expected(self):
        self.write_run()
        text, ok = S.summary([self.dir], ["kb_cumsum", "kb_argmax"])
        self.assertTrue(ok, text)
        self.assertIn("| kb_cumsum | PASS kept | 100.00 | 250.00 | 80.00 | 2.500x | 0.800x | FAIL | FAIL | yes |", text)
        # No torch.compile time: shown as none, and not fast against it.
        self.assertIn("| kb_argmax | PASS kept | 50.00 | 60.00 | - | 1.200x | - | FAIL | FAIL | yes |", text)
        self.assertIn("kb_cumsum wrong: FAIL: shape sweep: wrong output", text)
        self.assertIn("| 0 | 2/2 | 1/2 |", text)
        self.assertIn("| 1 | 2/2 | 0/2 |", text)
        self.assertIn("| 1.5 | 1/2 | 0/2 |", text)
        self.assertIn("| 2 | 1/2 | 0/2 |", text)
        self.assertIn("## KernelBench\n\n| p | vs eager (ours) |\n| 1 | 2/2 (100%) |", text)
        self.assertNotIn("## Kernels", text)

    def test_a_cheat_kept_or_a_problem_missing_is_not_as_expected(self):
        self.write_run(cheat_passes=True)
        text, ok = S.summary([self.dir], ["kb_cumsum", "kb_argmax", "kb_mlp"])
        self.assertFalse(ok)
        self.assertIn("| FAIL | PASS kept | NO |", text)
        self.assertIn("| kb_mlp | not evaluated |", text)
        self.assertIn("over the 3 problems", text)
        self.assertIn("| 1 | 2/3 | 0/3 |", text)
        self.assertEqual(S.main(["x", "--expect", "kb_cumsum", self.dir]), 1)

    def test_an_honest_file_that_fails_makes_the_problem_incorrect(self):
        with open(os.path.join(self.dir, "results.tsv"), "w") as f:
            f.write(HEADER)
            f.write(row(1, "kb_mlp", "FAIL", False, 0, "first file, not passing: the honest kernel", "smoke: wrong output"))
        text, ok = S.summary([self.dir], [])
        self.assertFalse(ok)
        self.assertIn("| kb_mlp | FAIL | 0.00 |", text)
        self.assertIn("kb_mlp honest: FAIL: smoke: wrong output", text)
        self.assertIn("| 0 | 0/1 | 0/1 |", text)
        self.assertIn("(no " + os.path.join(self.dir, "report.md"), text)

    def test_bad_usage_and_a_folder_without_results_exit_2(self):
        self.assertEqual(S.main(["x"]), 2)
        self.assertEqual(S.main(["x", "--expect"]), 2)
        self.assertEqual(S.main(["x", self.dir]), 2)


if __name__ == "__main__":
    unittest.main()
