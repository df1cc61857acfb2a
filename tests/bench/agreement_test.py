"""bench/agreement.py: the agreement metric on hand-made answers, and one end-to-end run on the tiny
reference LLaDA model (it must run and write a consistent report; the figures there are not results)."""
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


def _binary():
    return Path(os.environ.get("DLLM_BINARY", ROOT / "build" / "bin" / "dllm"))


def _model():
    return Path(os.environ.get("DLLM_SHARED", ROOT.parent / "shared")) / "reference" / "tiny-llada-q4km.gguf"


@unittest.skipUnless(_binary().exists() and _model().exists(), "needs the built dllm and ../shared/reference")
class EndToEnd(unittest.TestCase):
    def test_one_prompt(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "agreement.json"
            r = subprocess.run([sys.executable, str(ROOT / "bench" / "agreement.py"), "--model", str(_model()),
                                "--binary", str(_binary()), "--limit", "1", "--threads", "2",
                                "--common", "--max-tokens 16 --block-length 8 --no-early-stop",
                                "--arm", "dual=--cache dual", "--arm", "steps2=--steps 2 --cache prefix",
                                "--out", str(out)], capture_output=True, text=True, timeout=600)
            self.assertEqual(r.returncode, 0, r.stderr)
            rep = json.loads(out.read_text())
            p = rep["prompts"][0]
            self.assertEqual(p["exact"]["steps_run"], 16)
            self.assertEqual(p["steps2"]["steps_run"], 2)
            self.assertEqual(rep["summary"]["steps2"]["steps_speedup"], 8.0)
            for arm in ("dual", "steps2"):
                self.assertEqual(p[arm]["token_agreement"], ag.token_agreement(p["exact"]["tokens"], p[arm]["tokens"]))
                self.assertIn("cache", p[arm]["sampler"])


if __name__ == "__main__":
    unittest.main()
