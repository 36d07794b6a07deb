"""The web studio (python3 -m lumen.studio, docs/studio.md) in a real headless browser.

The server runs in a child process on a free port, with PYTHONPATH at the lumen package this
test imported (the build's, as the Makefile sets it); Debian's chromium and chromium-driver,
driven by python3-selenium, load the page, upload a generated PNG through the file input,
move the halation slider with the keyboard, switch the device (when lumen lists more than one:
lavapipe's vulkan:0 in CI), and check that the picture changes, the render time is shown, a
device that is not there gives lumen's message in the page, and a slider drag costs only a few
renders (the page debounces). A screenshot is saved as studio.png in $LUMEN_TEST_ARTIFACTS, else
tests/python/artifacts/ (ignored by git). Without chromium, chromedriver or selenium the browser
test is skipped with a message; the HTTP checks run anyway.
"""

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

import lumen

HERE = Path(__file__).resolve().parent
ARTIFACTS = Path(os.environ.get("LUMEN_TEST_ARTIFACTS") or HERE / "artifacts")
PACKAGE_ROOT = str(Path(lumen.__file__).resolve().parent.parent)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver") or (
    "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
TIMEOUT = 40   # seconds for any one wait in the page (lavapipe is slow, CI machines are busy)


def studio_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in [PACKAGE_ROOT, env.get("PYTHONPATH")] if p)
    return env


@pytest.fixture(scope="module")
def server():
    """The studio on a free port: yields its URL; stops it at the end."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lumen.studio", "--port", "0", "--quiet", "--threads", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=studio_env())
    first = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(60)
    line = first[0] if first else ""
    m = re.search(r"http://127\.0\.0\.1:\d+/", line)
    if not m:
        proc.kill()
        err = proc.communicate(timeout=10)[1]
        pytest.fail(f"the studio did not start: stdout {line!r}, stderr:\n{err}", pytrace=False)
    try:
        yield m.group(0)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def post(url, body, ctype="application/json"):
    data = json.dumps(body).encode() if ctype == "application/json" else body
    req = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_help():
    r = subprocess.run([sys.executable, "-m", "lumen.studio", "--help"], capture_output=True,
                       text=True, env=studio_env(), timeout=60)
    assert r.returncode == 0, r.stderr
    for word in ("--port", "--host", "--open", "IMAGE", "lumen.devices()", "halation", "bloom",
                 "grain", "--display-size"):
        assert word in r.stdout, f"--help does not mention {word}"


def test_http(server):
    """The API without a browser: state, a render with its facts, and errors as JSON."""
    with urllib.request.urlopen(server + "api/state", timeout=TIMEOUT) as r:
        state = json.load(r)
    specs = [d["spec"] for d in state["devices"]]
    assert specs[0] == "cpu" and state["device"] in specs
    assert {s["name"] for s in state["stocks"]} >= {"portra400"}
    assert state["image"]["width"] > 0
    status, headers, body = post(server + "api/render", {"stock": "portra400", "device": "cpu"})
    assert status == 200 and body[:8] == b"\x89PNG\r\n\x1a\n", body[:200]
    facts = json.loads(headers["X-Lumen-Render"])
    assert facts["device"] == "cpu" and facts["ms"] > 0 and facts["ms_per_mp"] > 0
    # errors carry lumen's message
    status, _, body = post(server + "api/render", {"device": "vulkan:99"})
    assert status == 400 and "no device 'vulkan:99'" in json.loads(body)["error"]
    status, _, body = post(server + "api/render", {"halation": "lots"})
    assert status == 400 and "halation" in json.loads(body)["error"]
    status, _, body = post(server + "api/open", {"path": "/nonexistent/x.png"})
    assert status == 400 and "/nonexistent/x.png" in json.loads(body)["error"]
    status, _, body = post(server + "api/upload?name=junk.png", b"not a png", "image/png")
    assert status == 400 and "junk.png" in json.loads(body)["error"]
    with pytest.raises(urllib.error.HTTPError):
        urllib.request.urlopen(server + "static/..%2Fserver.py", timeout=TIMEOUT)


# ---- the browser ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM or not CHROMEDRIVER:
        pytest.skip("chromium and chromedriver are needed for the studio's browser test "
                    "(Debian: apt-get install chromium chromium-driver python3-selenium; "
                    "scripts/install-deps.sh test installs them)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("python3-selenium is needed for the studio's browser test "
                    "(Debian: apt-get install python3-selenium)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,900", "--hide-scrollbars"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_script_timeout(TIMEOUT)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(driver, what, condition, timeout=TIMEOUT):
    t0 = time.monotonic()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() - t0 > timeout:
            err = driver.find_element("id", "error").text
            pytest.fail(f"timed out waiting for {what} (page error: {err!r})", pytrace=False)
        time.sleep(0.05)


def after(driver, name):
    return driver.find_element("id", "after").get_attribute("data-" + name) or ""


def renders(driver):
    return int(after(driver, "renders") or 0)


def settle(driver, more_than):
    """Waits until the page is idle with more than `more_than` renders shown; returns the count."""
    wait_for(driver, f"render {more_than + 1}",
             lambda: driver.execute_script("return document.body.dataset.state") == "idle"
             and renders(driver) > more_than)
    return renders(driver)


def shown_pixels(driver, tmp_path, element="after"):
    """The picture as the browser decoded it (a canvas read back as PNG), as an array."""
    url = driver.execute_script("""
        const img = document.getElementById(arguments[0]);
        const c = document.createElement('canvas');
        c.width = img.naturalWidth; c.height = img.naturalHeight;
        c.getContext('2d').drawImage(img, 0, 0);
        return c.toDataURL('image/png');""", element)
    path = tmp_path / f"{element}-{time.monotonic_ns()}.png"
    path.write_bytes(base64.b64decode(url.split(",", 1)[1]))
    return lumen.read_image(str(path)).astype(np.int16)


def scene_png(path, width=320, height=240):
    """A small gradient with bright discs and a bright bar: halation has something to show."""
    yy, xx = np.mgrid[0:height, 0:width]
    img = np.zeros((height, width, 3), np.uint8)
    img[..., 0] = 20 + 60 * xx // width
    img[..., 1] = 30 + 40 * yy // height
    img[..., 2] = 60
    for cx, cy, r in ((80, 60, 14), (220, 90, 9), (160, 170, 20)):
        img[(xx - cx) ** 2 + (yy - cy) ** 2 <= r * r] = 255
    img[200:204, 40:280] = 255
    lumen.write_image(str(path), img)
    return path


def test_page(server, browser, tmp_path):
    d = browser
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    d.get(server)
    n = settle(d, 0)   # the generated test scene, rendered on the default device
    timing = d.find_element("id", "timing").text
    assert re.search(r"last render: \d+(\.\d+)? ms, \d+(\.\d+)? ms/MP", timing), timing
    assert "ran on " in d.find_element("id", "ran-on").text

    # upload a PNG through the file input
    png = scene_png(tmp_path / "upload.png")
    before_id = d.find_element("id", "before").get_attribute("data-image")
    d.find_element("id", "file").send_keys(str(png))
    wait_for(d, "the upload", lambda: d.find_element("id", "before").get_attribute("data-image")
             != before_id)
    n = settle(d, n)
    info = d.find_element("id", "image-info").text
    assert "upload.png" in info and "320\u00d7240" in info, info
    assert d.find_element("id", "error").is_displayed() is False
    digest0, pixels0 = after(d, "digest"), shown_pixels(d, tmp_path)
    assert pixels0.shape[:2] == (240, 320)
    wait_for(d, "the before picture", lambda: d.execute_script(
        "return document.getElementById('before').complete"))
    assert (shown_pixels(d, tmp_path, "before") != pixels0).any(), "the film look changed nothing"

    # move the halation slider: ten key presses in a row are a drag; the page debounces them
    slider = d.find_element("id", "halation")
    slider.send_keys(Keys.ARROW_RIGHT * 10)
    assert d.find_element("id", "halation-value").text == "1.50"
    m = settle(d, n)
    assert m - n <= 3, f"ten slider steps cost {m - n} renders (the page should debounce)"
    n = m
    assert after(d, "digest") != digest0, "moving the halation slider did not change the picture"
    pixels1 = shown_pixels(d, tmp_path)
    assert (pixels1 != pixels0).any()
    assert re.search(r"\d+(\.\d+)? ms", d.find_element("id", "timing").text)

    # switch the device (lavapipe gives vulkan:0 in CI); the picture stays the same within
    # rounding
    device = Select(d.find_element("id", "device"))
    specs = [o.get_attribute("value") for o in device.options]
    current = device.first_selected_option.get_attribute("value")
    others = [s for s in specs if s != current]
    if others:
        device.select_by_value(others[0])
        n = settle(d, n)
        assert after(d, "device") == others[0]
        assert others[0] in d.find_element("id", "ran-on").text
        pixels2 = shown_pixels(d, tmp_path)
        diff = np.abs(pixels2 - pixels1)
        assert diff.mean() < 0.5, f"{current} and {others[0]} differ: mean {diff.mean()} levels"
    else:
        print(f"studio: only one device ({current}); the device switch is not exercised")

    # a device that is not there: lumen's message in the page
    d.execute_script("""const o = document.createElement('option');
        o.value = o.textContent = 'vulkan:99';
        document.getElementById('device').appendChild(o);""")
    errors = int(after(d, "errors") or 0)
    device.select_by_value("vulkan:99")
    wait_for(d, "the error", lambda: int(after(d, "errors") or 0) > errors)
    box = d.find_element("id", "error")
    assert box.is_displayed() and "no device 'vulkan:99'" in box.text, box.text
    device.select_by_value(others[0] if others else current)
    n = settle(d, n)
    assert not box.is_displayed()

    # the test scene again, for the screenshot
    d.find_element("id", "scene").click()
    wait_for(d, "the scene", lambda: "test scene" in d.find_element("id", "image-info").text)
    n = settle(d, n)
    wait_for(d, "the before picture", lambda: d.execute_script(
        "return document.getElementById('before').complete"))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "studio.png"
    assert d.save_screenshot(str(shot)), f"no screenshot written to {shot}"
    print(f"studio: screenshot {shot}")


def test_lumen_studio_command_starts_the_studio(lumen_bin):
    """`lumen studio` is `python3 -m lumen.studio` (the build's package first on PYTHONPATH);
    $LUMEN_PYTHON names the interpreter, and a missing one is a clear error."""
    env = dict(os.environ, LUMEN_PYTHON=sys.executable)
    r = subprocess.run([lumen_bin, "studio", "--help"], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0 and "lumen.studio" in r.stdout and "--port" in r.stdout, r
    r = subprocess.run([lumen_bin, "studio", "--lumen-help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "LUMEN_PYTHON" in r.stdout
    r = subprocess.run([lumen_bin, "studio"], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, LUMEN_PYTHON="/nonexistent/python"))
    assert r.returncode == 1 and "LUMEN_PYTHON" in r.stderr, r.stderr
