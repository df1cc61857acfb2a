"""Headless Debian chromium driven through its own chromedriver (Selenium), for tests/server/webui_test.py
and scripts/webui_screenshot.py. No network beyond 127.0.0.1: Selenium Manager stays off (an explicit
driver path, SE_AVOID_STATS), Chrome resolves no host name but 127.0.0.1 and sends everything else to
a proxy port nothing listens on, and its own background services are off."""

import os

os.environ.setdefault("SE_AVOID_STATS", "true")

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
except ImportError:  # pragma: no cover
    raise SystemExit("the selenium package is missing: run ./dllm test (it installs tests/requirements.txt "
                     "into build/venv), or put build/venv/bin first on PATH")

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def missing():
    """Why the browser cannot start here ("" when it can): the Debian packages the launcher installs."""
    absent = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    if absent:
        return (f"{' and '.join(absent)} not found: install Debian's chromium and chromium-driver "
                "(./dllm test does)")
    return ""


def chromium(width=1280, height=900):
    """A new headless browser; quit() it. Its console log is kept (driver.get_log("browser"))."""
    why = missing()
    if why:
        raise RuntimeError(why)
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}", "--force-device-scale-factor=1", "--hide-scrollbars",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=127.0.0.1",
                "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-extensions",
                "--disable-default-apps", "--metrics-recording-only", "--lang=en-US"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
