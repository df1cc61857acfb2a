"""bench/sampler_bench.py: the per-step rows and the medians on hand-made trace lines (the figures of
a real run are results, not tested here)."""
import json
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import sampler_bench as sb  # noqa: E402


class TraceSteps(unittest.TestCase):
    def test_rows_are_masks_before_the_step(self):
        lines = [json.dumps({"step": 0, "positions": [20, 21], "masks_left": 6, "sample_ms": 4.0, "forward_ms": 10.0}),
                 json.dumps({"step": 1, "positions": [22], "masks_left": 5, "sample_ms": 3.0, "forward_ms": 10.0}),
                 json.dumps({"step": 2, "positions": [23, 24, 25, 26, 27], "masks_left": 0, "sample_ms": 2.0,
                             "forward_ms": 40.0})]
        steps = sb.steps_from_trace(lines)
        self.assertEqual(steps, [(8, 4.0, 10.0), (6, 3.0, 10.0), (5, 2.0, 40.0)])
        s = sb.summarize_steps(steps)
        self.assertEqual(s["steps"], 3)
        self.assertEqual(s["median_rows"], 6)
        self.assertEqual(s["median_sample_ms"], 3.0)
        self.assertEqual(s["median_forward_ms"], 10.0)
        self.assertEqual(s["sample_over_forward"], 0.3)
        self.assertEqual(s["median_step_ratio"], 0.3)  # 0.4, 0.3, 0.05
        self.assertEqual(s["sample_ms_per_row"], round(9.0 / 19, 4))


if __name__ == "__main__":
    unittest.main()
