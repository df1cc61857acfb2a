"""bench/qgemm_ab.py: the summary of an A/B, checked on hand-made rounds: the ratio is taken round by
round (A / B of the same round), then its median, minimum and maximum; a benchmark only one build ran
is left out."""
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import qgemm_ab as qa  # noqa: E402


class Summary(unittest.TestCase):
    def test_by_hand(self):
        rounds = [
            {"A": {"k": 3.0, "only_a": 1.0}, "B": {"k": 4.0}},   # 0.75
            {"A": {"k": 6.0, "only_a": 1.0}, "B": {"k": 5.0}},   # 1.2: a slow round for A
            {"A": {"k": 2.0, "only_a": 1.0}, "B": {"k": 4.0}},   # 0.5
        ]
        s = qa.summarize(rounds)
        self.assertEqual(list(s), ["k"])
        self.assertEqual(s["k"]["A_ms_median"], 3.0)
        self.assertEqual(s["k"]["B_ms_median"], 4.0)
        self.assertEqual(s["k"]["ratio_A_over_B_median"], 0.75)  # not 3 / 4 by chance: the middle ratio
        self.assertEqual(s["k"]["ratio_min"], 0.5)
        self.assertEqual(s["k"]["ratio_max"], 1.2)


if __name__ == "__main__":
    unittest.main()
