"""Scoring functions of bench/eval_gsm8k.py against cases worked out by hand, and the harness end to
end on the tiny reference LLaDA model (3 problems; it must run, parse and score: the accuracy of a
random-weight model means nothing and is never reported)."""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import eval_gsm8k as ev  # noqa: E402

Z = 1.959963984540054


class AnswerExtraction(unittest.TestCase):
    def test_reference(self):
        self.assertEqual(ev.reference_answer("She makes 9 * 2 = $<<9*2=18>>18.\n#### 18"), 18)
        self.assertEqual(ev.reference_answer("...\n#### 1,234"), 1234)
        self.assertEqual(ev.reference_answer("...\n#### -7"), -7)
        with self.assertRaises(ValueError):
            ev.reference_answer("no marker 5")

    def test_strict_first(self):
        self.assertEqual(ev.extract_answer("9 * 2 = 18\n#### 18"), (18, "strict"))
        self.assertEqual(ev.extract_answer("#### 5 and later 7"), (5, "strict"))  # first '#### N'
        self.assertEqual(ev.extract_answer("#### 1,000"), (1000, "strict"))
        self.assertEqual(ev.extract_answer("#### 18."), (18, "strict"))  # trailing period dropped
        self.assertEqual(ev.extract_answer("#### -3"), (-3, "strict"))

    def test_last_number_fallback(self):
        self.assertEqual(ev.extract_answer("3 + 4 = 7, so she pays $12."), (12, "last_number"))
        self.assertEqual(ev.extract_answer("It costs $1,250.50 in total"), (1250.5, "last_number"))
        self.assertEqual(ev.extract_answer("#### $40"), (40, "last_number"))  # '$' breaks the strict regex
        self.assertEqual(ev.extract_answer("the temperature is -4 degrees"), (-4, "last_number"))
        self.assertEqual(ev.extract_answer("no digits here"), (None, "none"))
        self.assertEqual(ev.extract_answer(""), (None, "none"))

    def test_is_correct(self):
        self.assertTrue(ev.is_correct(18.0, 18))
        self.assertFalse(ev.is_correct(18.5, 18))
        self.assertFalse(ev.is_correct(None, 18))


class McNemar(unittest.TestCase):
    # p = min(1, 2 * sum_{k <= min(b, c)} C(b + c, k) / 2^(b + c)), worked by hand.
    def test_tables(self):
        self.assertEqual(ev.mcnemar_exact(0, 0), 1.0)
        self.assertEqual(ev.mcnemar_exact(1, 0), 1.0)                  # 2 * 1/2
        self.assertEqual(ev.mcnemar_exact(0, 5), 0.0625)               # 2 * 1/32
        self.assertEqual(ev.mcnemar_exact(2, 8), 0.109375)             # 2 * (1 + 10 + 45) / 1024
        self.assertEqual(ev.mcnemar_exact(8, 2), 0.109375)
        self.assertEqual(ev.mcnemar_exact(0, 10), 0.001953125)         # 2 / 1024
        self.assertEqual(ev.mcnemar_exact(3, 3), 1.0)                  # 2 * 42/64 > 1
        self.assertAlmostEqual(ev.mcnemar_exact(1, 6), 2 * 8 / 128)    # (1 + 7) / 128


class Intervals(unittest.TestCase):
    def test_wilson_hand(self):
        # x = 0, n = 10: lower 0; upper = (z^2/n) / (1 + z^2/n) = 0.38415 / 1.38415.
        lo, hi = ev.wilson(0, 10)
        self.assertEqual(lo, 0.0)
        self.assertAlmostEqual(hi, (Z * Z / 10) / (1 + Z * Z / 10), places=12)
        self.assertAlmostEqual(hi, 0.27753, places=4)
        lo, hi = ev.wilson(10, 10)
        self.assertAlmostEqual(lo, 1 - 0.27753, places=4)
        self.assertEqual(hi, 1.0)

    def test_newcombe_all_discordant_one_way(self):
        # 10 problems, B right and A wrong on every one: phi = 0 (empty margins), d = 1,
        # lower = 1 - sqrt((1 - 0.72247)^2 + 0.27753^2) = 1 - 0.27753 * sqrt(2) = 0.60751, upper = 1.
        d, lo, hi = ev.newcombe_paired_diff(0, 0, 10, 0)
        self.assertEqual(d, 1.0)
        self.assertAlmostEqual(lo, 0.60751, places=4)
        self.assertEqual(hi, 1.0)

    def test_newcombe_symmetry_and_containment(self):
        for table in [(12, 2, 9, 21), (5, 0, 0, 5), (30, 4, 1, 15), (0, 3, 3, 0)]:
            d, lo, hi = ev.newcombe_paired_diff(*table)
            both, a_only, b_only, neither = table
            self.assertAlmostEqual(d, (b_only - a_only) / sum(table))
            self.assertLessEqual(lo, d)
            self.assertGreaterEqual(hi, d)
            self.assertGreaterEqual(lo, -1)
            self.assertLessEqual(hi, 1)
            d2, lo2, hi2 = ev.newcombe_paired_diff(both, b_only, a_only, neither)  # arms swapped
            self.assertAlmostEqual(d2, -d)
            self.assertAlmostEqual(lo2, -hi)
            self.assertAlmostEqual(hi2, -lo)

    def test_newcombe_hand_case(self):
        # both 12, A only 2, B only 9, neither 21 (n 44): p_A = 14/44, p_B = 21/44, d = 7/44.
        # phi = (12*21 - 2*9) / sqrt(14 * 30 * 21 * 23) = 234 / sqrt(202860).
        n = 44
        pa, pb = 14 / n, 21 / n
        la, ua = ev.wilson(14, n)
        lb, ub = ev.wilson(21, n)
        phi = 234 / math.sqrt(14 * 30 * 21 * 23)
        lo = pb - pa - math.sqrt((pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2)
        hi = pb - pa + math.sqrt((ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la) + (pa - la) ** 2)
        d, lo2, hi2 = ev.newcombe_paired_diff(12, 2, 9, 21)
        self.assertAlmostEqual(d, 7 / 44)
        self.assertAlmostEqual(lo2, lo, places=12)
        self.assertAlmostEqual(hi2, hi, places=12)
        # The pairing narrows the interval against the unpaired Wilson-difference (phi = 0) width.
        self.assertLess(hi2 - lo2, (math.hypot(pb - lb, ua - pa) + math.hypot(ub - pb, pa - la)))

    def test_summary_counts(self):
        rec = lambda c: {"correct": c, "generate_ms": 10.0, "steps_run": 4, "method": "strict"}  # noqa: E731
        s = ev.summarize([rec(x) for x in (1, 1, 0, 0)], [rec(x) for x in (1, 0, 1, 1)])
        self.assertEqual(s["table"], {"both": 1, "a_only": 1, "b_only": 2, "neither": 0})
        self.assertEqual(s["accuracy_a"], 0.5)
        self.assertEqual(s["accuracy_b"], 0.75)
        self.assertEqual(s["mcnemar_exact_p"], 1.0)


def _binary():
    return Path(os.environ.get("DLLM_BINARY", ROOT / "build" / "bin" / "dllm"))


def _model():
    shared = Path(os.environ.get("DLLM_SHARED", ROOT.parent / "shared"))
    return shared / "reference" / "tiny-llada-q4km.gguf"


@unittest.skipUnless(_binary().exists() and _model().exists(), "needs the built dllm and ../shared/reference")
class EndToEnd(unittest.TestCase):
    def test_three_problems_run_parse_and_score(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report.json"
            r = subprocess.run([sys.executable, str(ROOT / "bench" / "eval_gsm8k.py"), "--model", str(_model()),
                                "--binary", str(_binary()), "--limit", "3", "--threads", "1", "--quiet",
                                "--common", "--max-tokens 16 --block-length 8",
                                "--arm-a", "--steps 16", "--arm-b", "--threshold 0.9 --cache dual",
                                "--out", str(out)], capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("McNemar exact p", r.stdout)
            rep = json.loads(out.read_text())
            s = rep["summary"]
            self.assertEqual(s["n"], 3)
            for arm in ("a", "b"):
                probs = rep["problems_" + arm]
                self.assertEqual(len(probs), 3)
                for p in probs:
                    self.assertIsInstance(p["text"], str)
                    self.assertEqual(p["correct"], ev.is_correct(p["prediction"], p["reference"]))
                    self.assertEqual((p["prediction"], p["method"]), ev.extract_answer(p["text"]))
                self.assertAlmostEqual(s["accuracy_" + arm], sum(p["correct"] for p in probs) / 3)
            # References are the subset's first three answers: 18, 3, 70000.
            self.assertEqual([p["reference"] for p in rep["problems_a"]], [18, 3, 70000])
            self.assertIn("--cache dual", rep["arm_b"])


if __name__ == "__main__":
    unittest.main()
