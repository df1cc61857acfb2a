"""bench/llada2_baseline.py: the floor figures it derives from a file's layout, checked on the llama.cpp-made
../shared/reference/tiny-llada2-q4km.gguf against byte and multiply-add counts worked by hand from that
file's shapes (its README section) and the ggml block sizes; and the expected-experts formula against
the issue's figure for LLaDA2.0-mini."""
import os
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import llada2_baseline as lb  # noqa: E402

SHARED = Path(os.environ.get("DLLM_SHARED", ROOT.parent / "shared"))
BINARY = os.environ.get("DLLM_BINARY", str(ROOT / "build" / "bin" / "dllm"))

# ggml block sizes (ggml-common.h): 256 weights per Q4_K block of 144 bytes, per Q6_K block of 210.
Q4K, Q6K = 144 / 256, 210 / 256


def q_bytes(n_in, n_out, per_weight):
    return round(n_in * n_out * per_weight)


class Floor(unittest.TestCase):
    def test_experts_touched_mini(self):
        # 32 rows x top-8 of 256 experts: 256 (1 - (31/32)^32) = 163.3, "about 163" in issue 31.
        self.assertAlmostEqual(256 * (1 - (1 - 8 / 256) ** 32), 163.3, places=1)

    @unittest.skipUnless((SHARED / "reference" / "tiny-llada2-q4km.gguf").exists() and Path(BINARY).exists(),
                         "needs ../shared/reference and the dllm binary")
    def test_tiny_llada2_by_hand(self):
        floor, layout = lb.layout_and_floor(Path(BINARY).parent, SHARED / "reference" / "tiny-llada2-q4km.gguf",
                                            bw_gbs=10.0, peak_gops_core=100.0, threads=2)
        self.assertEqual(layout, {"arch": "llada2", "n_layer": 4, "tensors": 54})
        # tiny-llada2: 4 layers, hidden 256, 4 / 2 heads of 64 (attn_qkv 256 x 512), layer 0 dense FFN
        # 512, layers 1-3: 16 experts of 256, 4 used, one shared expert of 256, vocab 50265; Q6_K
        # attn_qkv / ffn_down* in layers 2 and 3, Q6_K output, the rest Q4_K; norms, router, bias F32.
        E, k, rows = 16, 4, 32
        touched = E * (1 - (1 - k / E) ** rows)
        expert = {1: 3 * q_bytes(256, 256, Q4K),
                  2: 2 * q_bytes(256, 256, Q4K) + q_bytes(256, 256, Q6K)}
        expert[3] = expert[2]
        attention = (2 * q_bytes(256, 512, Q4K) + 2 * q_bytes(256, 512, Q6K)  # attn_qkv
                     + 4 * q_bytes(256, 256, Q4K))                            # attn_output
        dense = 3 * q_bytes(256, 512, Q4K)
        shared = sum(expert.values())  # one shared expert per MoE layer, typed as the routed ones
        router = 3 * 256 * 16 * 4
        norms_bias = 4 * (256 + 256 + 64 + 64) * 4 + 256 * 4 + 3 * 16 * 4
        lm_head = q_bytes(256, 50265, Q6K)
        embd_row = round(256 * Q4K)
        rest = attention + dense + shared + router + norms_bias + lm_head
        self.assertEqual(floor["experts_touched_per_layer"], round(touched, 2))
        self.assertEqual(floor["step_bytes_by_part"], {
            "experts": round(touched * sum(expert.values())), "attention": attention, "dense_ffn": dense,
            "shared_expert": shared, "router": router, "lm_head": lm_head, "norms_bias": norms_bias})
        self.assertEqual(floor["step_bytes"], round(touched * sum(expert.values()) + rest + rows * embd_row))
        self.assertEqual(floor["ar_bytes_per_token"], k * sum(expert.values()) + rest + embd_row)
        macs = {"experts": 3 * k * 3 * 256 * 256, "attention": 4 * (256 * 512 + 256 * 256),
                "dense_ffn": 3 * 256 * 512, "shared_expert": 3 * 3 * 256 * 256, "router": 3 * 256 * 16,
                "lm_head": 256 * 50265, "norms_bias": 0}
        self.assertEqual(floor["macs_per_row"], macs)
        self.assertEqual(floor["step_int8_ops"], 2 * rows * sum(macs.values()))
        self.assertAlmostEqual(floor["step_floor_bytes_s"], floor["step_bytes"] / 10e9)
        self.assertAlmostEqual(floor["step_floor_ops_s"], floor["step_int8_ops"] / 200e9)
        self.assertEqual(floor["step_floor_s"], max(floor["step_floor_bytes_s"], floor["step_floor_ops_s"]))


if __name__ == "__main__":
    unittest.main()
