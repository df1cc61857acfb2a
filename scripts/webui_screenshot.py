#!/usr/bin/env python3
"""Makes docs/webui.png, the web page's picture in docs/serving.md and the README: `dllm serve` with the
bundled fairy-tale model on a free 127.0.0.1 port, headless Debian chromium (tests/server/browser.py),
two questions, and the second answer's canvas replayed to a step in the middle of its denoising. The
picture is this script's output only; rerun it after changing the page:

    build/venv/bin/python3 scripts/webui_screenshot.py [--out docs/webui.png] [--binary build/bin/dllm]

Needs ./dllm test's setup (chromium, chromium-driver, build/venv with selenium). The step times and
speeds in the picture are this machine's."""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "server"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "webui.png"))
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "bin", "dllm"))
    ap.add_argument("--at", type=float, default=0.55, help="the replayed step, as a fraction of the steps")
    args = ap.parse_args()
    os.environ["DLLM_BINARY"] = os.path.abspath(args.binary)
    from browser import chromium  # noqa: E402  (after DLLM_BINARY is set)
    from server_util import FAIRYTALES, Server
    from webui_test import Page

    with Server(FAIRYTALES) as s:
        d = chromium(1280, 1060)
        try:
            p = Page(d, s.url).open()
            p.settings(max_tokens=64, steps=32, temperature=0.7, seed=11)
            for prompt in ("Tell me a story about a fox.", "What did the fox find in the forest?"):
                p.send(prompt)
                p.wait_idle()
            p.all("replay")[-1].click()
            p.find("replay-play").click()  # pause, then seek
            bar = p.all("replay-step")[-1]
            step = round(int(bar.get_attribute("max")) * args.at)
            p.js("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'));", bar, step)
            p.js("document.getElementById('scroll').scrollTop = 1e6; document.activeElement.blur();")
            time.sleep(0.8)  # the cells' colour transitions end
            d.save_screenshot(args.out)
        finally:
            d.quit()
    print(f"wrote {os.path.relpath(args.out, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
