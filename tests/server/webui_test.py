"""The web page of `dllm serve` (GET /, src/server/webui/) in a real browser: Debian's headless chromium
driven by Selenium (browser.py), with every host but 127.0.0.1 unresolvable. The page sends a prompt and
its final text must equal what POST /v1/chat/completions answers for the same messages and settings;
the canvas view must have shown the steps with the committed count rising; stop, a wrong API key and a
server killed mid-answer each leave the page usable with a message. Also the drawing of block and
re-noising fields from a hand-written event stream, reduced motion, a narrow window and WCAG text
contrast. The routes the page uses, over raw HTTP: webui_routes_test.py.

Writes build/webui-test.png (a screenshot after the first answer)."""

import json
import os
import re
import signal
import time
import unittest

from server_util import FAIRYTALES, LLADA, SHARED, Server, metric, request
from browser import chromium, missing

from selenium.common.exceptions import TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

BUILD = os.path.dirname(os.path.dirname(os.environ.get("DLLM_BINARY", "build/bin/dllm")))
CHAT = "/v1/chat/completions"
LLADA2 = os.path.join(SHARED, "reference", "tiny-llada2-q4km.gguf")
DIFFUSION_GEMMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "diffusion-gemma",
                               "tiny-diffusion-gemma-q4km.gguf")
WAIT_S = 60  # any wait for the page; a tiny model answers in well under a second

# Records every change of a canvas view's data-step / data-committed / data-block with its old value
# (MutationObserver sees each one, however many steps arrive in one network read).
WATCH_JS = """
window.__seen = [];
const root = document.getElementById("messages");
new MutationObserver((records) => {
  for (const r of records) {
    const view = r.target;
    if (!view.matches('[data-testid="canvas"]')) continue;
    const turn = [...root.querySelectorAll('[data-testid="canvas"]')].indexOf(view);
    window.__seen.push({turn, attr: r.attributeName, old: r.oldValue, now: view.getAttribute(r.attributeName),
                        cells: view.querySelectorAll('[data-testid="cell"]').length});
  }
}).observe(root, {subtree: true, attributes: true, attributeOldValue: true,
                  attributeFilter: ["data-step", "data-committed", "data-block"]});
"""

# Replaces fetch for the chat route with a stream the test writes: window.__feed(text), __close().
STUB_JS = """
const real = window.fetch.bind(window);
const enc = new TextEncoder();
window.fetch = async (url, opts) => {
  if (!String(url).endsWith("/v1/chat/completions")) return real(url, opts);
  window.__body = JSON.parse(opts.body);
  const stream = new ReadableStream({start(c) {
    window.__feed = (t) => c.enqueue(enc.encode(t));
    window.__close = () => c.close();
  }});
  return new Response(stream, {status: 200, headers: {"Content-Type": "text/event-stream"}});
};
"""

# Text colour and the background it sits on (the nearest non-transparent background-color) of
# every element matching the selectors that is displayed.
COLORS_JS = """
const out = [];
for (const sel of arguments[0]) {
  for (const e of document.querySelectorAll(sel)) {
    if (!e.offsetParent && getComputedStyle(e).position !== "fixed") continue;
    let b = e, bg = "rgba(0, 0, 0, 0)";
    while (b) {
      bg = getComputedStyle(b).backgroundColor;
      if (!/rgba\\(.*, 0\\)$/.test(bg) && bg !== "transparent") break;
      b = b.parentElement;
    }
    out.push([sel, getComputedStyle(e).color, bg, getComputedStyle(e).opacity]);
  }
}
return out;
"""


def tid(name):
    return f'[data-testid="{name}"]'


def luminance(rgb):
    """WCAG 2.x relative luminance of an sRGB colour (0-255 channels)."""
    def lin(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg, bg):
    """WCAG contrast ratio of two colours given as CSS rgb()/rgba() strings (alpha blended onto bg)."""
    def parse(s):
        v = [float(x) for x in re.findall(r"[\d.]+", s)]
        return v[:3], (v[3] if len(v) > 3 else 1.0)
    (f, a), (b, _) = parse(fg), parse(bg)
    f = [a * fc + (1 - a) * bc for fc, bc in zip(f, b)]
    hi, lo = sorted((luminance(f), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def reference(port, messages, settings, headers=None):
    """The non-streamed answer of POST /v1/chat/completions: the text the page must show."""
    st, _, raw = request(port, "POST", CHAT, {"messages": messages, **settings}, headers)
    assert st == 200, raw
    return json.loads(raw)["choices"][0]["message"]["content"]


class Page:
    """The page in one browser tab."""

    def __init__(self, driver, url):
        self.d = driver
        self.url = url

    def open(self, ready=True):
        self.d.get(self.url + "/")
        if ready:
            self.wait(lambda d: self.status() == "ready", "the page never said ready")
        return self

    def wait(self, cond, what, timeout=WAIT_S):
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.02).until(cond)
        except TimeoutException:
            raise AssertionError(f"{what} (within {timeout} s); the page said: "
                                 f"{self.d.find_element(By.TAG_NAME, 'body').text[-1500:]}")

    def find(self, name):
        return self.d.find_element(By.CSS_SELECTOR, tid(name))

    def all(self, name):
        return self.d.find_elements(By.CSS_SELECTOR, tid(name))

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def status(self):
        return self.js("const s = document.getElementById('status'); return s && s.dataset.state;")

    def setting(self, name, value):
        box = self.find("setting-" + name)
        box.clear()
        box.send_keys(str(value))

    def settings(self, **values):
        if not self.find("settings").is_displayed():
            self.find("settings-toggle").click()
        for name, value in values.items():
            self.setting(name, value)

    def watch(self):
        self.js(WATCH_JS)

    def send(self, text, enter=True):
        box = self.find("prompt")
        box.send_keys(text)
        if enter:
            box.send_keys(Keys.ENTER)  # keyboard send
        else:
            self.find("send").click()

    def busy(self):
        return self.find("stop").is_enabled()

    def wait_idle(self, what="the answer never finished"):
        self.wait(lambda d: not self.busy() and self.find("send").is_enabled(), what)

    def answers(self):
        return self.js("return [...document.querySelectorAll('[data-testid=\"answer\"]')].map(e => e.textContent);")

    def notes(self):
        return [e.text for e in self.all("error")]

    def canvas_step(self):
        """The step the last canvas view shows (0 before its first event)."""
        return int(self.js("const v = [...document.querySelectorAll('[data-testid=\"canvas\"]')].pop();"
                           "return v && v.dataset.step || 0;"))

    def seen(self, turn):
        """(steps, committed counts, blocks) the canvas view of `turn` went through, in order."""
        recs = [r for r in self.js("return window.__seen;") if r["turn"] == turn]
        out = {}
        for attr in ("data-step", "data-committed", "data-block"):
            rs = [r for r in recs if r["attr"] == attr]
            vals = [r["old"] for r in rs] + ([rs[-1]["now"]] if rs else [])
            vals = [v for v in vals if v not in (None, "")]
            out[attr] = [v for i, v in enumerate(vals) if i == 0 or v != vals[i - 1]]  # re-set, not changed
        cells = max((r["cells"] for r in recs), default=0)
        return ([int(v) for v in out["data-step"]], [int(v) for v in out["data-committed"]],
                out["data-block"], cells)

    def resources(self):
        """Every URL the page loaded or fetched."""
        return self.js("return [location.href, ...performance.getEntriesByType('resource').map(e => e.name)];")

    def severe_logs(self):
        return [e for e in self.d.get_log("browser") if e["level"] == "SEVERE"]


@unittest.skipIf(missing(), missing())
class Browser(unittest.TestCase):
    """One fairy-tale server (--parallel 2) and one browser for the tests that need nothing else."""

    @classmethod
    def setUpClass(cls):
        cls.s = Server(FAIRYTALES, args=["--parallel", "2"])
        try:
            cls.d = chromium(1280, 860)
        except Exception:
            cls.s.__exit__(None, None, None)
            raise

    @classmethod
    def tearDownClass(cls):
        cls.d.quit()
        cls.s.__exit__(None, None, None)

    def setUp(self):
        self.d.set_window_size(1280, 860)
        self.d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
        self.page = Page(self.d, self.s.url)

    def test_answer_equals_the_api_and_the_canvas_fills_in(self):
        p = self.page.open()
        self.assertEqual(p.find("model-name").text, "tiny-llada-fairytales-q4km")
        self.assertEqual(p.find("model-arch").text, "llada")
        settings = {"max_tokens": 64, "steps": 32, "temperature": 0.8, "seed": 7}
        p.settings(**settings)
        p.watch()
        first = "Tell me a story about a fox."
        p.send(first)
        p.wait_idle()
        answer = p.answers()[-1]
        self.assertEqual(answer, reference(self.s.port, [{"role": "user", "content": first}], settings))
        steps, committed, blocks, cells = p.seen(0)
        self.assertGreaterEqual(len(set(steps)), 2, steps)
        self.assertEqual(steps, sorted(steps))
        self.assertEqual(committed, sorted(committed), "the committed count never falls (LLaDA)")
        self.assertGreater(committed[-1], committed[0])
        self.assertEqual(cells, 64, "one cell per canvas position")
        # block_length 32 (LLaDA's default) over 64 positions: two blocks, in order.
        self.assertEqual(blocks, ["0,32", "32,64"])
        self.d.save_screenshot(os.path.join(BUILD, "webui-test.png"))

        # The history goes with the next turn.
        second = "What did the fox do then?"
        p.send(second)
        p.wait_idle()
        history = [{"role": "user", "content": first}, {"role": "assistant", "content": answer},
                   {"role": "user", "content": second}]
        self.assertEqual(p.answers()[-1], reference(self.s.port, history, settings))

        # The replay draws the first answer's steps again, ending at its last one.
        replay = p.all("replay")[0]
        replay.click()
        view = p.all("canvas")[0]
        self.assertTrue(view.is_displayed())
        p.wait(lambda d: view.get_attribute("data-step") == str(steps[-1]), "the replay did not reach the end")
        self.assertEqual(len(view.find_elements(By.CSS_SELECTOR, tid("cell"))), 64)

        origin = self.s.url + "/"
        self.assertTrue(all(u.startswith(origin) for u in p.resources()), p.resources())
        self.assertEqual(p.severe_logs(), [])

    def test_keyboard_shift_enter_is_a_new_line(self):
        p = self.page.open()
        p.settings(max_tokens=16, steps=16)
        box = p.find("prompt")
        box.send_keys("Once")
        box.send_keys(Keys.SHIFT, Keys.ENTER)
        box.send_keys("upon a time")
        self.assertEqual(p.answers(), [])
        self.assertEqual(box.get_attribute("value"), "Once\nupon a time")
        box.send_keys(Keys.ENTER)
        p.wait_idle()
        self.assertEqual(p.answers()[-1], reference(self.s.port, [{"role": "user", "content": "Once\nupon a time"}],
                                                    {"max_tokens": 16, "steps": 16, "temperature": 0, "seed": 0}))

    def test_two_tabs_each_see_their_own_canvas(self):
        settings = {"max_tokens": 192, "steps": 192, "temperature": 0.5, "seed": 3}
        prompts = ["The king had three daughters.", "A wolf lived in the forest."]
        tabs = []
        for i, prompt in enumerate(prompts):
            if i:
                self.d.switch_to.new_window("tab")
            p = Page(self.d, self.s.url).open()
            p.settings(**settings)
            p.watch()
            p.find("prompt").send_keys(prompt)
            tabs.append((self.d.current_window_handle, p))
        passes = metric(self.s.port, "dllm_forward_passes_total")
        seq_steps = metric(self.s.port, "dllm_sequence_steps_total")
        for handle, p in tabs:  # both requests in flight at once
            self.d.switch_to.window(handle)
            p.find("send").click()
        answers = []
        for handle, p in tabs:
            self.d.switch_to.window(handle)
            p.wait_idle()
            answers.append(p.answers()[-1])
            steps, committed, _, cells = p.seen(0)
            self.assertGreaterEqual(len(set(steps)), 2)
            self.assertGreater(committed[-1], committed[0])
            self.assertEqual(cells, 192)
        for prompt, answer in zip(prompts, answers):
            self.assertEqual(answer, reference(self.s.port, [{"role": "user", "content": prompt}], settings))
        self.assertNotEqual(answers[0], answers[1])
        # They ran together: some scheduler steps carried both canvases in one forward pass.
        self.assertLess(metric(self.s.port, "dllm_forward_passes_total") - passes,
                        metric(self.s.port, "dllm_sequence_steps_total") - seq_steps)
        self.d.close()
        self.d.switch_to.window(tabs[0][0])

    def test_blocks_ends_and_renoised_cells_from_a_hand_written_stream(self):
        """The fields no shipped model sends yet (changed), drawn as docs/serving.md defines them."""
        p = self.page.open()
        p.js(STUB_JS)
        p.send("hi")
        p.wait(lambda d: p.js("return !!window.__feed;"), "the page did not open the stream")

        def step(ev):
            p.js("window.__feed(arguments[0]);", "event: canvas\ndata: " + json.dumps(ev) + "\n\n")
            p.wait(lambda d: p.canvas_step() == ev["step"] + 1, f"step {ev['step']} not drawn")
            cells = p.all("cell")
            return [set(c.get_attribute("class").split()) - {"cell"} for c in cells], [c.text for c in cells]

        ev = {"object": "dllm.canvas", "step": 0, "step_ms": 2.5, "committed": [0], "tokens_committed": 1,
              "committed_total": 1, "cells": ["Once", None, None, None, None, None], "ends": [], "block": [0, 3]}
        cls, text = step(ev)
        self.assertEqual(cls, [{"new", "in-block"}, {"masked", "in-block"}, {"masked", "in-block"},
                               {"masked"}, {"masked"}, {"masked"}])
        self.assertEqual(text[0], "Once")
        self.assertEqual(p.find("step").text, "1")
        self.assertEqual(p.find("step-time").text, "2.50 ms")
        self.assertEqual(p.find("committed").text, "1 / 6")
        self.assertEqual(p.find("rate").text, "400 tok/s")  # 1 token in 2.5 ms

        ev.update(step=1, committed=[1, 2], committed_total=3, cells=["Once", " upon", " a", None, None, None])
        cls, text = step(ev)
        self.assertEqual(cls[:3], [{"in-block"}, {"new", "in-block"}, {"new", "in-block"}])
        self.assertEqual(text[1], "upon")

        ev.update(step=2, committed=[3, 5], committed_total=4, changed=[1, 2], block=[3, 6], ends=[5],
                  cells=["Once", None, " the", " time", None, "<|eot_id|>"])
        cls, text = step(ev)
        self.assertEqual(cls, [set(), {"masked", "changed"}, {"changed"}, {"new", "in-block"},
                               {"masked", "in-block"}, {"new", "in-block", "end"}])
        self.assertEqual(text[2], "the")
        self.assertEqual(text[5], "end")
        self.assertEqual(p.find("committed").text, "4 / 6")

        chunk = {"choices": [{"index": 0, "delta": {"content": "Once the time"}, "finish_reason": "stop"}]}
        p.js("window.__feed(arguments[0]); window.__close();", "data: " + json.dumps(chunk) + "\n\ndata: [DONE]\n\n")
        p.wait_idle()
        self.assertEqual(p.answers()[-1], "Once the time")
        # The request the page sent: the stream with canvas events and the panel's settings.
        body = p.js("return window.__body;")
        self.assertEqual(body["dllm"], {"canvas": True})
        self.assertTrue(body["stream"])
        self.assertEqual(body["messages"], [{"role": "user", "content": "hi"}])
        self.assertEqual((body["max_tokens"], body["steps"]), (64, 64))
        self.assertNotIn("seed", body)  # serve without --seed: /props has none, each request gets a fresh one

    def test_reduced_motion_keeps_the_step_counter(self):
        self.d.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]})
        p = self.page.open()
        p.js("localStorage.clear();")
        p.open()
        self.assertTrue(p.find("reduced-motion").is_selected(), "the setting follows prefers-reduced-motion")
        p.settings(max_tokens=64, steps=64)
        p.watch()
        p.send("Tell me about the queen.")
        p.wait_idle()
        steps, committed, _, cells = p.seen(0)
        self.assertGreaterEqual(len(set(steps)), 2, "the step counter runs")
        self.assertGreater(committed[-1], committed[0])
        self.assertEqual(cells, 0, "no cells drawn while it ran")
        view = p.all("canvas")[-1]
        self.assertFalse(view.is_displayed(), "folded at once, no transition")
        p.all("replay")[-1].click()
        self.assertEqual(view.get_attribute("data-step"), str(steps[-1]), "the replay shows the last step")
        self.assertEqual(len(p.all("cell")), 64)
        self.assertEqual(p.js("return document.getAnimations().length;"), 0)

    def test_narrow_window(self):
        # A phone-sized viewport (a window cannot be made this narrow).
        self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 360, "height": 740, "deviceScaleFactor": 1, "mobile": True})
        self.addCleanup(self.d.execute_cdp_cmd, "Emulation.clearDeviceMetricsOverride", {})
        p = self.page.open()
        self.assertEqual(p.js("return window.innerWidth;"), 360)
        self.assertFalse(p.find("settings").is_displayed(), "the panel starts closed in a narrow window")
        p.settings(max_tokens=48, steps=24)
        p.find("settings-toggle").click()
        p.send("Tell me a story.")
        p.wait_idle()
        self.assertTrue(p.answers()[-1])
        p.all("replay")[-1].click()
        width = p.js("return document.documentElement.clientWidth;")
        self.assertLessEqual(p.js("return document.documentElement.scrollWidth;"), width, "no sideways scroll")
        for name in ("prompt", "send", "stop", "canvas", "settings-toggle"):
            r = p.find(name).rect if name != "canvas" else p.all("canvas")[-1].rect
            self.assertTrue(p.all(name)[-1].is_displayed(), name)
            self.assertLessEqual(r["x"] + r["width"], width + 0.5, name)
            self.assertGreaterEqual(r["x"], 0, name)

    def test_text_contrast(self):
        """WCAG AA: 4.5:1 for the page's text, light and dark."""
        selectors = [".answer", ".msg.user .text", ".who", ".meta span", ".stats", ".stats b", ".cell:not(.masked)",
                     ".cell.new", ".note", ".status", "button#send", "button.ghost", ".fields label",
                     ".fields small", ".model-facts dt", ".model-name", ".badge", ".intro p", ".legend li"]
        for scheme in ("light", "dark"):
            self.d.execute_cdp_cmd("Emulation.setEmulatedMedia",
                                   {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
            p = self.page.open()
            p.settings(max_tokens=32, steps=32)
            p.send("Hello.")
            p.wait_idle()
            p.all("replay")[-1].click()
            p.all("replay-play")[-1].click()  # pause, then the last step
            p.js("const r = arguments[0]; r.value = r.max; r.dispatchEvent(new Event('input'));",
                 p.all("replay-step")[-1])
            p.js("document.getElementById('intro').hidden = false;"
                 "const n = document.createElement('div'); n.className = 'note'; n.textContent = 'x';"
                 "document.getElementById('messages').append(n);")
            time.sleep(0.6)  # the cells' colour transitions end
            seen = set()
            for sel, fg, bg, opacity in p.js(COLORS_JS, selectors):
                seen.add(sel)
                if float(opacity) < 1:
                    continue  # after-end cells are dimmed on purpose: not the answer
                self.assertGreaterEqual(contrast(fg, bg), 4.5, f"{scheme}: {sel}: {fg} on {bg}")
            self.assertEqual(seen, set(selectors), f"{scheme}: some selectors matched nothing shown")


@unittest.skipIf(missing(), missing())
class BrowserOwnServer(unittest.TestCase):
    """The tests that start their own server: an API key, stop and a killed server on a long canvas."""

    def setUp(self):
        self.d = chromium(1280, 860)
        self.addCleanup(self.d.quit)

    def test_wrong_api_key(self):
        with Server(FAIRYTALES, args=["--api-key", "s3cret"]) as s:
            p = Page(self.d, s.url).open(ready=False)
            p.wait(lambda d: p.status() == "key", "the page did not ask for the key")
            self.assertTrue(p.find("key-form").is_displayed())
            p.find("api-key").send_keys("wrong", Keys.ENTER)
            p.wait(lambda d: "did not accept" in p.find("key-error").text, "no message for a wrong key")
            self.assertTrue(p.find("key-form").is_displayed())
            self.assertEqual(p.js("return sessionStorage.getItem('dllm.apiKey');"), None)
            p.find("api-key").send_keys("s3cret", Keys.ENTER)
            p.wait(lambda d: p.status() == "ready", "the right key was not taken")
            self.assertFalse(p.find("key-form").is_displayed())
            self.assertEqual(p.find("model-name").text, "tiny-llada-fairytales-q4km")
            p.settings(max_tokens=32, steps=32)
            p.send("Who lived in the castle?")
            p.wait_idle()
            key = {"Authorization": "Bearer s3cret"}
            self.assertEqual(p.answers()[-1], reference(s.port, [{"role": "user", "content": "Who lived in the castle?"}],
                                                        {"max_tokens": 32, "steps": 32, "temperature": 0, "seed": 0},
                                                        key))
            p.open()  # a reload keeps the key for the tab's session
            self.assertFalse(p.find("key-form").is_displayed())
            # The key goes wrong while the page is open (the server restarted with another one):
            # the answer says so and the page asks again.
            p.js("sessionStorage.setItem('dllm.apiKey', 'stale');")
            p.send("Hello?")
            p.wait_idle()
            self.assertIn("refused the API key", p.notes()[-1])
            self.assertTrue(p.find("key-form").is_displayed())

    def block_diffusion_defaults(self, model, schedule, disabled, sent):
        """The page on a block-diffusion model with its settings untouched: the panel offers what the
        model's sampler takes (the rest disabled), the request carries the defaults GET /props gave,
        and the answer equals the API's for those settings (serve --seed 1, so /props has a seed the page
        sends)."""
        with Server(model, args=["--seed", "1"]) as s:
            p = Page(self.d, s.url).open()
            props = json.loads(request(s.port, "GET", "/props")[2])
            self.assertEqual(props["schedule"], schedule)
            p.find("settings-toggle").click()
            off = {n for n in ("block_length", "threshold", "cache", "temperature", "top_p")
                   if not p.find("setting-" + n).is_enabled()}
            self.assertEqual(off, disabled)
            d = props["default_generation_settings"]
            if "cache" not in disabled:
                self.assertEqual(p.find("setting-cache").get_attribute("value"), d["cache"])
            p.watch()
            p.send("Hello there")
            p.wait_idle()
            self.assertEqual(p.notes(), [])
            settings = {k: d[k] for k in sent if d.get(k) is not None}
            self.assertEqual(p.answers()[-1], reference(s.port, [{"role": "user", "content": "Hello there"}], settings))
            steps, _, blocks, _ = p.seen(0)
            self.assertGreaterEqual(len(set(steps)), 2, steps)
            return blocks

    @unittest.skipUnless(os.path.exists(LLADA2), f"{LLADA2} not found")
    def test_llada2_with_its_defaults(self):
        blocks = self.block_diffusion_defaults(LLADA2, "block_diffusion", set(),
                                               ("max_tokens", "temperature", "seed", "threshold", "steps"))
        self.assertTrue(blocks, "the active block was never marked")

    @unittest.skipUnless(os.path.exists(DIFFUSION_GEMMA), f"{DIFFUSION_GEMMA} not found")
    def test_diffusion_gemma_with_its_defaults(self):
        self.block_diffusion_defaults(DIFFUSION_GEMMA, "entropy_bound",
                                      {"block_length", "threshold", "cache", "temperature", "top_p"},
                                      ("max_tokens", "seed", "steps"))

    @unittest.skipUnless(os.path.exists(LLADA), f"{LLADA} not found")
    def test_stop_cancels_the_request(self):
        with Server(LLADA) as s:
            p = Page(self.d, s.url).open()
            p.settings(max_tokens=256, steps=256, block_length=256)
            p.send("hi")
            p.wait(lambda d: p.canvas_step() >= 3, "no steps shown")
            cancelled = metric(s.port, 'dllm_requests_total{outcome="cancelled"}')
            p.find("stop").click()
            p.wait_idle("stop did not end the request")
            self.assertIn("Stopped after step", p.notes()[-1])
            end = time.time() + 20
            while metric(s.port, 'dllm_requests_total{outcome="cancelled"}') < cancelled + 1:
                self.assertLess(time.time(), end, "the server did not cancel the job")
                time.sleep(0.05)
            # The request is counted as cancelled when the server sees the client go; the scheduler
            # drops the job at its next step (engine.cpp), a step later.
            while metric(s.port, "dllm_active_canvases") != 0:
                self.assertLess(time.time(), end, "the cancelled job still runs")
                time.sleep(0.05)
            # The page goes on.
            p.settings(max_tokens=8, steps=8, block_length=8)
            p.send("hello", enter=False)
            p.wait_idle()
            self.assertEqual(p.answers()[-1], reference(s.port, [{"role": "user", "content": "hello"}],
                                                        {"max_tokens": 8, "steps": 8, "block_length": 8,
                                                         "temperature": 0, "seed": 0}))

    @unittest.skipUnless(os.path.exists(LLADA), f"{LLADA} not found")
    def test_server_killed_mid_answer(self):
        s = Server(LLADA)
        try:
            p = Page(self.d, s.url).open()
            p.settings(max_tokens=256, steps=256, block_length=256)
            p.send("hi")
            p.wait(lambda d: p.canvas_step() >= 3, "no steps shown")
            s.proc.send_signal(signal.SIGKILL)
            s.proc.wait(timeout=10)
            p.wait_idle("the page kept waiting for a dead server")
            self.assertIn("Lost the connection to the server", p.notes()[-1])
            p.wait(lambda d: p.status() == "offline", "the status did not say offline")
        finally:
            s.__exit__(None, None, None)
        # A server on the same port again: the page notices and answers.
        with Server(LLADA, port=s.port) as s2:
            p.wait(lambda d: p.status() == "ready", "the page did not see the server come back")
            p.settings(max_tokens=8, steps=8, block_length=8)
            p.send("hello")
            p.wait_idle()
            self.assertEqual(p.answers()[-1], reference(s2.port, [{"role": "user", "content": "hello"}],
                                                        {"max_tokens": 8, "steps": 8, "block_length": 8,
                                                         "temperature": 0, "seed": 0}))


if __name__ == "__main__":
    unittest.main()
