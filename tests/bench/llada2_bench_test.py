"""bench/llada2_bench.py: the summary of a results file, checked on hand-made runs: the 32-row steps are
the non-first steps of each block of 8, each repeat's ratio is ours against llama.cpp in that repeat,
and the recompute ratio pairs the none run with the exact run of the same repeat."""
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import llada2_bench as lb  # noqa: E402


class Summary(unittest.TestCase):
    def test_by_hand(self):
        runs = {
            "exact": [{"block_step_ms_median": 300.0, "generate_ms": 10000.0, "peak_rss_bytes": 110,
                       "load_before": [1.0]},
                      {"block_step_ms_median": 500.0, "generate_ms": 16000.0, "peak_rss_bytes": 100,
                       "load_before": [3.0]}],
            "none": [{"generate_ms": 120000.0, "peak_rss_bytes": 105}],
            "llama": [{"pp32_ms_per_token": 18.75, "tg16_ms_per_token": 60.0, "load_after": [1.5]},
                      {"pp32_ms_per_token": 50.0, "tg16_ms_per_token": 100.0, "load_after": [3.5]}],
            "peaks": [{"read_bw_zmm_2t_gbs": 20.0, "peak_zmm_vpdpbusd_gops": 800.0},
                      {"read_bw_zmm_2t_gbs": 10.0, "peak_zmm_vpdpbusd_gops": 800.0}],
        }
        floor = {"step_bytes": 6e9, "ar_bytes_per_token": 7e8, "step_int8_ops": 7e10}
        r = lb.summarize({"runs": runs, "threads": 2, "floor": floor, "file_bytes": 100})
        s = r["summary"]
        # 18.75 ms x 32 = 600 ms over 300 ms: 2x; 1600 over 500: 3.2x.
        self.assertEqual([round(x, 6) for x in s["speedup_vs_llama_pp32_per_repeat"]], [2.0, 3.2])
        self.assertEqual(s["per_repeat"][0]["tokens_per_step_to_match_llama_ar"], 5.0)
        self.assertEqual(s["our_block_step_ms"], 400.0)
        # repeat 0: none 120 s against exact 10 s.
        self.assertEqual(s["exact_speedup_vs_none_repeat0"], 12.0)
        self.assertEqual(s["peak_rss_over_file"], 1.1)
        # Median bandwidth 15 GB/s: 6e9 / 15e9 = 0.4 s; ops 7e10 / (2 x 800e9) = 0.04375 s.
        self.assertAlmostEqual(s["floor_s_this_run_bw"], 0.4)

    def test_actual_routing_floor_by_hand(self):
        # One run of 2 blocks of 8 steps; the first step of each block is not a 32-row step.
        passes = [{"rows": 64, "weight_bytes": 9e9, "macs": 9e10}] + \
            [{"rows": 32, "weight_bytes": 1.5e9, "macs": 3e10}] * 7
        fwd = [900.0] + [300.0] * 7
        r = lb.actual_routing_floor([{"passes": passes * 2, "forward_ms": fwd * 2}], 15.0, 800.0, 2)
        # bytes 1.5e9 / 15e9 = 0.1 s; ops 2 x 3e10 / (2 x 800e9) = 0.0375 s: floor 0.1 s, step 0.3 s.
        self.assertEqual(r["steps"], 14)
        self.assertAlmostEqual(r["floor_s_median"], 0.1)
        self.assertAlmostEqual(r["step_over_floor_median"], 3.0)
        self.assertEqual(lb.actual_routing_floor([{"passes": [], "forward_ms": fwd}], 15.0, 800.0, 2), {})

    def test_block_steps(self):
        # 2 blocks of 8 steps: steps 0 and 8 fold a finished block in; the median of the other 14.
        fwd = [1000.0] + [10.0 + i for i in range(7)] + [900.0] + [20.0 + i for i in range(7)]
        self.assertEqual(lb.block_step_times(fwd), [10.0 + i for i in range(7)] + [20.0 + i for i in range(7)])


if __name__ == "__main__":
    unittest.main()
