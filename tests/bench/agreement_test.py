"""bench/agreement.py: the agreement metric, the arm rotation and the trace statistics on hand-made
inputs, and end-to-end runs on the tiny reference LLaDA and Dream models (they must run interleaved and
write a consistent report; the figures there are not results)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import agreement as ag  # noqa: E402


class TokenAgreement(unittest.TestCase):
    def test_cases(self):
        self.assertEqual(ag.token_agreement([], []), 1.0)
        self.assertEqual(ag.token_agreement([1, 2, 3], [1, 2, 3]), 1.0)
        self.assertEqual(ag.token_agreement([1, 2, 3, 4], [1, 9, 3, 4]), 0.75)
        self.assertEqual(ag.token_agreement([1, 2], [1, 2, 5, 6]), 0.5)  # the longer length counts
        self.assertEqual(ag.token_agreement([1, 2, 3, 4], []), 0.0)
        self.assertEqual(ag.token_agreement([2, 1], [1, 2]), 0.0)  # position by position, not as sets


class Interleaving(unittest.TestCase):
    def test_rotation(self):
        names = ["exact", "a", "b"]
        self.assertEqual(ag.rotated(names, 0), ["exact", "a", "b"])
        self.assertEqual(ag.rotated(names, 1), ["a", "b", "exact"])
        self.assertEqual(ag.rotated(names, 2), ["b", "exact", "a"])
        self.assertEqual(ag.rotated(names, 3), names)  # wraps: every arm leads once in 3 units

    def test_flag_value(self):
        self.assertEqual(ag.flag_value(["--max-tokens", "64", "--block-length", "32"], "--block-length"), "32")
        self.assertEqual(ag.flag_value(["--block-length=16", "--block-length", "8"], "--block-length"), "8")
        self.assertIsNone(ag.flag_value(["--threads", "2"], "--block-length"))


def _line(block, positions, confs, kind, fwd, masks_left):
    return {"step": 0, "block": block, "positions": positions, "tokens": [0] * len(positions),
            "confidences": confs, "masks_left": masks_left, "forward_ms": fwd, "sample_ms": 0.1,
            "cache_refresh": kind}


class TraceStats(unittest.TestCase):
    def test_hand_made_trace(self):
        lines = [_line(0, [5, 6, 7], [0.95, 0.92, 0.91], "full", 10.0, 5),
                 _line(0, [8], [0.5], "window", 4.0, 4),
                 _line(0, [9], [None], "window", 6.0, 3)]  # null confidence (non-finite) is skipped
        s = ag.trace_stats(lines, 0.9)
        self.assertAlmostEqual(s["commits_per_step_mean"], 5 / 3)
        self.assertEqual(s["commits_per_step_max"], 3)
        self.assertAlmostEqual(s["median_sample_ms"], 0.1)
        self.assertEqual(s["steps_committing_more_than_one"], 1)
        self.assertEqual(s["cache_steps"], {"full": 1, "window": 2})
        self.assertEqual(s["median_forward_ms_by_cache_step"], {"full": 10.0, "window": 5.0})
        self.assertEqual(s["steps_reaching_threshold"], 1)
        self.assertAlmostEqual(s["max_committed_confidence"], 0.95)
        self.assertNotIn("threshold", ag.trace_stats(lines, None))

    def test_window_rows(self):
        # Prompt 5, canvas 69, block 32: block 0 = [5, 37), block 1 = [37, 69). Prefix windows run from the
        # block start to the canvas end (64, then 32 rows); dual windows are the block (32, 32). Dream's
        # logit shift starts each window one row earlier (65, 33; 33, 33).
        lines = [_line(0, [5], [0.1], "full", 1, 0), _line(0, [6], [0.1], "window", 1, 0),
                 _line(1, [37], [0.1], "full", 1, 0), _line(1, [38], [0.1], "window", 1, 0)]
        self.assertEqual(ag.window_rows(lines, 5, 69, 32, "prefix", False), [64, 32])
        self.assertEqual(ag.window_rows(lines, 5, 69, 32, "dual", False), [32, 32])
        self.assertEqual(ag.window_rows(lines, 5, 69, 32, "prefix", True), [65, 33])
        self.assertEqual(ag.window_rows(lines, 5, 69, 32, "dual", True), [33, 33])

    def test_note_when_threshold_never_reached(self):
        summary = {"t": {"threshold": 0.9, "steps_reaching_threshold": 0, "max_committed_confidence": 1e-4,
                         "mean_commits_per_step": 1.0}}
        notes = ag.notes_for(summary)
        self.assertEqual(len(notes), 1)
        self.assertIn("never reached", notes[0])
        summary["t"]["steps_reaching_threshold"] = 3
        self.assertEqual(ag.notes_for(summary), [])


def _binary():
    return Path(os.environ.get("DLLM_BINARY", ROOT / "build" / "bin" / "dllm"))


def _model(name):
    return Path(os.environ.get("DLLM_SHARED", ROOT.parent / "shared")) / "reference" / name


def _run(model, extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "agreement.json"
        r = subprocess.run([sys.executable, str(ROOT / "bench" / "agreement.py"), "--model", str(model),
                            "--binary", str(_binary()), "--threads", "1", "--out", str(out)] + extra,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise AssertionError(r.stderr)
        return json.loads(out.read_text()), r.stdout


@unittest.skipUnless(_binary().exists() and _model("tiny-llada-q4km.gguf").exists(),
                     "needs the built dllm and ../shared/reference")
class EndToEndLlada(unittest.TestCase):
    def test_interleaved_arms(self):
        # 16 tokens, block 8, steps 16: 2 blocks of 8 one-token steps in every arm (random weights never
        # reach 0.9, so threshold decoding also commits one token per step).
        rep, stdout = _run(_model("tiny-llada-q4km.gguf"), [
            "--limit", "2", "--common", "--max-tokens 16 --block-length 8 --no-early-stop",
            "--arm", "threshold+dual=--threshold 0.9 --cache dual", "--arm", "prefix=--cache prefix"])
        names = ["exact", "threshold+dual", "prefix"]
        self.assertEqual([u["order"] for u in rep["units"]], [names, names[1:] + names[:1]])
        for key in ("machine", "commit", "command", "commands", "utc"):
            self.assertTrue(rep[key], key)
        for u in rep["units"]:
            ex = u["arms"]["exact"]
            self.assertEqual(ex["steps_run"], 16)
            self.assertEqual(ex["cache_refresh"], ["none"] * 16)
            for name in names:
                r = u["arms"][name]
                self.assertEqual(r["tokens_committed"], 16)
                self.assertAlmostEqual(r["ms_per_token"], r["generate_ms"] / 16)
                self.assertGreater(r["wall_ms"], 0)
            for name in names[1:]:
                r = u["arms"][name]
                self.assertEqual(r["token_agreement"], ag.token_agreement(ex["tokens"], r["tokens"]))
                # Refresh at each block start, window otherwise (Fast-dLLM).
                self.assertEqual(r["cache_refresh"], (["full"] + ["window"] * 7) * 2)
            td = u["arms"]["threshold+dual"]
            self.assertEqual(td["commits"], [1] * 16)
            self.assertEqual(td["steps_reaching_threshold"], 0)
            n = ex["n_prompt_tokens"]
            self.assertAlmostEqual(td["expected_window_over_full_cost"], 8 / (n + 16))  # dual: the block
            # prefix: 16 rows in block 0's window steps, 8 in block 1's.
            self.assertAlmostEqual(u["arms"]["prefix"]["window_rows_mean"], 12.0)
        s = rep["summary"]
        self.assertEqual(s["threshold+dual"]["full_steps"], 4)
        self.assertEqual(s["threshold+dual"]["window_steps"], 28)
        self.assertEqual(s["threshold+dual"]["mean_commits_per_step"], 1.0)
        self.assertEqual(s["prefix"]["steps_speedup"], 1.0)
        self.assertTrue(any("threshold+dual" in n and "never reached" in n for n in rep["notes"]))
        self.assertIn("never reached", stdout)


@unittest.skipUnless(_binary().exists() and _model("tiny-dream-q4km.gguf").exists(),
                     "needs the built dllm and ../shared/reference")
class EndToEndDream(unittest.TestCase):
    def test_threshold_dual(self):
        # 8 tokens in threshold blocks of 4: one token per step, so 2 blocks of 4 steps; dual windows are
        # the block plus the row before it (the logit shift): 5 rows.
        rep, _ = _run(_model("tiny-dream-q4km.gguf"), [
            "--limit", "1", "--common", "--max-tokens 8 --block-length 4 --no-early-stop",
            "--arm", "threshold+dual=--threshold 0.9 --cache dual"])
        td = rep["units"][0]["arms"]["threshold+dual"]
        self.assertEqual(td["steps_run"], 8)
        self.assertEqual(td["cache_refresh"], ["full", "window", "window", "window"] * 2)
        self.assertEqual(td["window_rows_mean"], 5)
        self.assertEqual(td["tokens_committed"], 8)


if __name__ == "__main__":
    unittest.main()
