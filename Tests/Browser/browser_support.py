"""What the browser tests share: a free port, the API, bounded waits, a headless Chromium with a
fake microphone, and the server they run against."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

WAIT = 60  # seconds any one condition may take on a busy machine


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def api(base, method, path, body=None, token=None):
    request = urllib.request.Request(base + path, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    data = json.dumps(body).encode() if body is not None else None
    with urllib.request.urlopen(request, data, timeout=30) as response:
        text = response.read()
        return json.loads(text) if text else None


def wait_for(what, condition, limit=WAIT):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception:  # the page may be between states
            pass
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def browser(wav):
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in [
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}",
        "--autoplay-policy=no-user-gesture-required",
        "--window-size=900,1000",
    ]:
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def sign_in(driver, base, username, password):
    driver.get(base + "/app/?record&raw")
    wait_for("the sign-in form", lambda: driver.find_element(By.NAME, "username").is_displayed())
    driver.find_element(By.NAME, "username").send_keys(username)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.ID, "signin-submit").click()
    wait_for(f"{username}'s friends", lambda: driver.find_elements(By.CSS_SELECTOR, "#friends li[data-username]"))
    wait_for(f"{username}'s event stream", lambda: driver.find_element(By.ID, "connection").text == "streaming")


def stage(driver):
    box = driver.find_element(By.ID, "call")
    return None if not box.is_displayed() else box.get_attribute("data-stage")


def frames(driver, which):
    """The frames the page's call audio sent or received: [(time ms, bytes)]."""
    rows = driver.execute_script(
        f"const a = window.switchboard.audios[window.switchboard.audios.length - 1];"
        f"return a.{which}.map(f => [f.t, Array.from(f.pcm)]);"
    )
    return [(t, tuple(pcm)) for t, pcm in rows]


def compare(sent, received, label):
    """Received must be sent frames, in order; returns (matched, delays in ms)."""
    index = {}
    for position, (t, pcm) in enumerate(sent):
        index.setdefault(pcm, []).append((position, t))
    matched, delays, last = 0, [], -1
    silent = tuple([0] * 160)
    for t, pcm in received:
        if pcm == silent:
            continue
        candidates = [(p, st) for p, st in index.get(pcm, []) if p > last]
        assert candidates, f"{label}: a received frame was never sent (or out of order)"
        position, sent_at = candidates[0]
        last = position
        matched += 1
        delays.append(t - sent_at)
    return matched, delays




class Server:
    """`switchboard serve` on a free loopback port with a fresh database, stopped on exit."""

    def __init__(self, binary, work, out, env=None):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [binary, "serve", "--listen", f"127.0.0.1:{self.port}", "--data-dir", os.path.join(work, "data")],
            stdout=open(os.path.join(out, "server.log"), "w"), stderr=subprocess.STDOUT,
            env={**os.environ, "SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15", **(env or {})})
        wait_for("the server", lambda: api(self.base, "GET", "/healthz") is not None)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def register(base, username):
    return api(base, "POST", "/auth/register",
               {"username": username, "password": f"{username}-password", "displayName": username.title()})
