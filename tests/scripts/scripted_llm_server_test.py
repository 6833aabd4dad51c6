"""scripts/scripted-llm-server.py --needs-feedback: it writes the fix only from a prompt that shows
the failed file as a diff against the best and the compiler's log naming the typo.
Run by ctest: python3 -m unittest scripted_llm_server_test.py"""
import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("scripted_llm_server", os.path.join(HERE, "../../scripts/scripted-llm-server.py"))
S = importlib.util.module_from_spec(spec)
spec.loader.exec_module(S)

BEST = "#define AK_VEC 2\n__global__ void k() {\n  const float inv = 1.0f;\n}\n"
FAILED = "#define AK_VEC 4\n__global__ void k() {\n  const flaot inv = 1.0f;\n}\n"
DIFF = ("--- best.cu\n+++ #2.cu\n@@ -1,4 +1,4 @@\n-#define AK_VEC 2\n+#define AK_VEC 4\n __global__ void k() {\n"
        "-  const float inv = 1.0f;\n+  const flaot inv = 1.0f;\n }\n")


def prompt(failures):
    return "# The last failures\n%s\n# The current best file\n```cuda\n%s```\n" % (failures, BEST)


def file_of(reply):
    return [b for info, b in S.fenced_blocks(reply) if info == "cuda"][-1]


class NeedsFeedback(unittest.TestCase):
    def test_without_failures_it_proposes_the_gain_with_a_typo(self):
        self.assertEqual(file_of(S.feedback_reply(prompt("(none)"))), FAILED)

    def test_with_the_diff_and_the_log_it_writes_the_fix(self):
        shown = ('#2 COMPILE_ERROR | idea: "x"\nIts file against the current best:\n````diff\n%s````\n'
                 'What the harness said:\n```text\nk.cu(3): error: identifier "flaot" is undefined\n```\n' % DIFF)
        reply = S.feedback_reply(prompt(shown))
        self.assertEqual(file_of(reply), FAILED.replace("flaot", "float"))
        self.assertTrue(reply.startswith("Hypothesis: "))

    def test_a_verdict_word_alone_is_not_enough(self):
        shown = '- #2 COMPILE_ERROR, reverted | idea: "x"\n'
        self.assertEqual(file_of(S.feedback_reply(prompt(shown))), FAILED)
        without_log = "````diff\n%s````\n" % DIFF
        self.assertEqual(file_of(S.feedback_reply(prompt(without_log))), FAILED)

    def test_a_diff_that_does_not_fit_the_best_is_not_applied(self):
        self.assertIsNone(S.apply_unified_diff("other\nfile\n", DIFF))
        self.assertEqual(S.apply_unified_diff(BEST, DIFF), FAILED)


if __name__ == "__main__":
    unittest.main()
