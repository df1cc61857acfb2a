"""bench/dgemma_bench.py: llama-diffusion-cli's step times read from a log written by hand in its format
(a timestamped `diffusion step: i/N` line as each step begins, carriage returns between them, and the
`total time` line on stdout), and the summary's per-repeat ratios worked by hand."""
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import dgemma_bench as db  # noqa: E402

LOG = ("0.00.020.942 W init: embeddings required\n"
       "0.00.063.435 I \rdiffusion step: 0/3 [   ] 0%0.00.273.435 I \rdiffusion step: 1/3 [=  ] 33%"
       "0.01.023.435 I \rdiffusion step: 2/3 [== ] 66%")


class LlamaLog(unittest.TestCase):
    def test_steps_from_the_gaps_and_the_total(self):
        # Steps 0 and 1: 0.210 s and 0.750 s (timestamps are minutes.seconds.ms.us); step 2:
        # the total 1500 ms less the 0.960 s before it.
        steps = db.llama_step_seconds(LOG, "text\ntotal time: 1500.00ms, time per step: 500.00ms\n")
        self.assertEqual(len(steps), 3)
        for got, want in zip(steps, [0.210, 0.750, 0.540]):
            self.assertAlmostEqual(got, want, places=6)

    def test_without_the_total_the_gaps_alone(self):
        self.assertEqual(len(db.llama_step_seconds(LOG, "garbled")), 2)
        self.assertEqual(db.llama_step_seconds("no steps here", ""), [])


class Summary(unittest.TestCase):
    def test_by_hand(self):
        runs = {"ours": [{"step_s": [1.0, 2.0, 4.0, 3.0], "peak_rss_bytes": 120},
                         {"step_s": [1.0, 5.0, 5.0, 5.0], "peak_rss_bytes": 110}],
                "llama": [{"step_s": [9.0, 9.0, 12.0], "peak_rss_bytes": 90},
                          {"step_s": [9.0, 10.0, 10.0], "peak_rss_bytes": 95}]}
        s = db.summarize({"runs": runs, "file_bytes": 100})["summary"]
        # Self-conditioned steps (1..): ours medians 3 and 5, llama.cpp's 10.5 and 10.
        self.assertEqual([r["speedup"] for r in s["per_repeat"]], [3.5, 2.0])
        self.assertEqual(s["speedup_median"], 2.75)
        self.assertEqual(s["ours_step_s"], 4.0)
        self.assertEqual(s["peak_rss_over_file"], 1.2)


if __name__ == "__main__":
    unittest.main()
