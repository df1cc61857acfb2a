"""bench/profile_forward.py: parse_profile on hand-made stderr in the format dllm prints with DLLM_PROFILE=1
(src/cli phase table; src/cpu/moe.cpp MoeFfn::print_times for a MoE model). A real run's figures are
results, not tested here."""
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import profile_forward as pf  # noqa: E402

STDERR = """loading...
profile: 2 forward passes; per pass:
phase             wall ms  wall%     cpu ms   cpu%
gemm q/k/v           124.5   13.8      246.9   14.1
moe ffn              560.1   61.9     1095.0   62.6
total                905.3  100.0     1750.5  100.0
moe ffn passes, per forward pass:
pass              wall ms     cpu ms
route                23.6       44.1
gate/up             329.5      648.3
down                181.2      358.3
moe expert gemms: 225.6 G int8 ops per CPU-s, 445.2 G per wall-s (113 G multiply-adds per forward pass)
moe rows per expert, per forward pass:
rows              experts       rows    thread ms G ops/thread-s
0                   847.0        0.0          0.0            0.0
1-2                   7.0       10.5         10.9           47.2
>128                103.5    14532.0       1102.4          328.2
done
"""


class ParseProfile(unittest.TestCase):
    def test_phases_moe_passes_rate_and_rows_per_expert(self):
        p = pf.parse_profile(STDERR)
        self.assertEqual(p["forward_passes"], 2)
        self.assertEqual(p["phases"]["moe ffn"], {"wall_ms": 560.1, "cpu_ms": 1095.0})
        self.assertEqual(p["phases"]["total"]["cpu_ms"], 1750.5)
        self.assertEqual(p["moe_passes"]["gate/up"], {"wall_ms": 329.5, "cpu_ms": 648.3})
        self.assertEqual(p["moe_expert_gemm_gops_per_cpu_s"], 225.6)
        self.assertEqual(p["moe_expert_gemm_gops_per_wall_s"], 445.2)
        self.assertEqual(p["moe_rows_per_expert"],
                         {"0": {"experts": 847.0, "rows": 0.0, "thread_ms": 0.0, "gops_per_thread_s": 0.0},
                          "1-2": {"experts": 7.0, "rows": 10.5, "thread_ms": 10.9, "gops_per_thread_s": 47.2},
                          ">128": {"experts": 103.5, "rows": 14532.0, "thread_ms": 1102.4,
                                   "gops_per_thread_s": 328.2}})

    def test_a_dense_model_has_no_moe_tables(self):
        dense = STDERR.split("moe ffn passes")[0]
        p = pf.parse_profile(dense)
        self.assertNotIn("moe_passes", p)
        self.assertNotIn("moe_rows_per_expert", p)


if __name__ == "__main__":
    unittest.main()
