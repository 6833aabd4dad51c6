"""tests/gpu/write-measured-times.py on made-up kernel files and a made-up TSV in a temporary folder:
only the `// measured:` line changes, a second run changes nothing, bad input changes no file.
Run by ctest: python3 -m unittest write_measured_times_test.py"""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "write-measured-times.py")
HEADER = "file\ttype\tmedian_us\tspread\tdevice\tdate\n"

STARTER = ("// rmsnorm starter: y = x * rsqrt(mean(x^2) + eps) * weight\n"
           "//\n"
           "// bench: autokernel bench kernels_cuda/rmsnorm/rmsnorm.cu --kernel rmsnorm --dtype fp16\n"
           "// measured: not yet measured\n"
           "#include <cuda_fp16.h>\n"
           "// measured: in the body, not a header line\n"
           "#define AK_THREADS 256\n")
VARIANT = STARTER.replace("starter", "variant rows: one warp a row").replace("\n", "\r\n")


class WriteMeasuredTimes(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp()
        self.write("kernels_cuda/rmsnorm/rmsnorm.cu", STARTER.replace("// measured: in the body, not a header line\n", ""))
        self.write("kernels_cuda/rmsnorm/variants/rows.cu", VARIANT.replace("// measured: in the body, not a header line\r\n", ""))

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", newline="") as f:
            f.write(text)
        return path

    def read(self, rel):
        with open(os.path.join(self.root, rel), newline="") as f:
            return f.read()

    def run_script(self, tsv_text):
        tsv = self.write("out/measured.tsv", tsv_text)
        return subprocess.run([sys.executable, SCRIPT, tsv, "--root", self.root], capture_output=True, text=True)

    def tsv(self):
        return (HEADER +
                "kernels_cuda/rmsnorm/rmsnorm.cu\trmsnorm\t109.34\t0.0123\tNVIDIA H100 80GB HBM3\t2026-11-27\n"
                "kernels_cuda/rmsnorm/variants/rows.cu\trmsnorm\tFAIL\t\tNVIDIA H100 80GB HBM3\t2026-11-27\n")

    def test_only_the_measured_line_changes_and_line_endings_stay(self):
        before_starter, before_variant = self.read("kernels_cuda/rmsnorm/rmsnorm.cu"), self.read("kernels_cuda/rmsnorm/variants/rows.cu")
        r = self.run_script(self.tsv())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 of 2 files rewritten", r.stdout)
        starter = self.read("kernels_cuda/rmsnorm/rmsnorm.cu")
        self.assertEqual(starter, before_starter.replace(
            "// measured: not yet measured",
            "// measured: 109.34 us median, spread 1.2% ((p90 - p10) / median), fp16 at the benchmark shape, "
            "NVIDIA H100 80GB HBM3, 2026-11-27"))
        variant = self.read("kernels_cuda/rmsnorm/variants/rows.cu")
        self.assertEqual(variant, before_variant.replace(
            "// measured: not yet measured",
            "// measured: FAIL (no time), fp16 at the benchmark shape, NVIDIA H100 80GB HBM3, 2026-11-27"))
        self.assertEqual(variant.count("\r\n"), before_variant.count("\r\n"))

    def test_a_second_run_with_the_same_tsv_changes_nothing(self):
        self.assertEqual(self.run_script(self.tsv()).returncode, 0)
        first = self.read("kernels_cuda/rmsnorm/rmsnorm.cu")
        r = self.run_script(self.tsv())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("0 of 2 files rewritten", r.stdout)
        self.assertEqual(self.read("kernels_cuda/rmsnorm/rmsnorm.cu"), first)

    def test_a_new_measurement_replaces_the_old(self):
        self.assertEqual(self.run_script(self.tsv()).returncode, 0)
        self.assertEqual(self.run_script(self.tsv().replace("109.34", "98.10")).returncode, 0)
        starter = self.read("kernels_cuda/rmsnorm/rmsnorm.cu")
        self.assertIn("// measured: 98.10 us median", starter)
        self.assertEqual(starter.count("// measured:"), 1)

    def test_bad_input_is_refused_before_any_file_is_written(self):
        before = self.read("kernels_cuda/rmsnorm/rmsnorm.cu")
        self.write("kernels_cuda/rmsnorm/variants/twice.cu", STARTER)   # two measured lines
        cases = {
            "two measured lines": self.tsv() + "kernels_cuda/rmsnorm/variants/twice.cu\trmsnorm\t1\t0\tGPU\t2026-11-27\n",
            "no header": self.tsv().split("\n", 1)[1],
            "a short row": self.tsv() + "kernels_cuda/rmsnorm/rmsnorm.cu\trmsnorm\t1\n",
            "a path outside the root": self.tsv() + "../elsewhere.cu\trmsnorm\t1\t0\tGPU\t2026-11-27\n",
            "a spread that is no number": self.tsv().replace("0.0123", "wide"),
        }
        for name, text in cases.items():
            with self.subTest(name):
                r = self.run_script(text)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn("write-measured-times.py:", r.stderr)
                self.assertEqual(self.read("kernels_cuda/rmsnorm/rmsnorm.cu"), before)

    def test_a_missing_file_is_a_runtime_failure(self):
        r = self.run_script(self.tsv() + "kernels_cuda/rmsnorm/variants/gone.cu\trmsnorm\t1\t0\tGPU\t2026-11-27\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("gone.cu", r.stderr)

    def test_every_kernel_file_of_the_repository_has_one_bench_line_naming_itself_and_one_measured_line(self):
        repo = os.path.realpath(os.path.join(HERE, "../.."))
        kernels = os.path.join(repo, "kernels_cuda")
        files = []
        for t in sorted(os.listdir(kernels)):
            starter = os.path.join(kernels, t, t + ".cu")
            if os.path.isfile(starter):
                files.append(starter)
                variants = os.path.join(kernels, t, "variants")
                if os.path.isdir(variants):
                    files += [os.path.join(variants, v) for v in sorted(os.listdir(variants)) if v.endswith(".cu")]
        self.assertGreater(len(files), 10)
        for path in files:
            rel = os.path.relpath(path, repo)
            t = rel.split(os.sep)[1]
            with self.subTest(rel), open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
                self.assertIn(f"// bench: autokernel bench {rel} --kernel {t} --dtype fp16", lines)
                self.assertEqual(sum(1 for line in lines if line.startswith("// measured:")), 1)


if __name__ == "__main__":
    unittest.main()
