#!/usr/bin/env python3
"""A browser and a Swift SDK phone call each other through the relay, both ways round, and
sound crosses both ways: the SDK phone (`switchboard-dev phone`: the SDK's client and
RelayMediaSession in real time) plays a tone and records what it hears; the browser's fake
microphone plays speech and its page keeps the frames it received.

Checked each time: what the SDK phone heard is the browser's speech (SNR after alignment), and
what the browser received is the SDK phone's tone (its strongest frequency, 700 Hz).

usage: sdk_phone_test.py SWITCHBOARD_BINARY OUT_DIR   (switchboard-dev beside the binary)
"""

import json
import os
import subprocess
import sys
import tempfile
import threading

from selenium.webdriver.common.by import By

from browser_support import Server, api, browser, frames, read_wav_8k, register, sign_in, snr, sounds, stage, wait_for

TONE = 700.0


class Phone:
    """`switchboard-dev phone` in the background; its JSON lines are collected as they come."""

    def __init__(self, dev, base, arguments, out, name):
        self.lines = []
        self.process = subprocess.Popen(
            [dev, "phone", "--server", base, *arguments], stdout=subprocess.PIPE,
            stderr=open(os.path.join(out, f"{name}.log"), "w"), text=True)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.process.stdout:
            self.lines.append(json.loads(line))

    def said(self, event):
        return next((line for line in self.lines if line.get("event") == event), None)

    def finish(self, limit):
        self.process.wait(timeout=limit)
        assert self.process.returncode == 0, f"the SDK phone exited {self.process.returncode}"

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def strongest_frequency(received):
    import numpy

    signal_ = numpy.concatenate([numpy.array(pcm, dtype=float) for _, pcm in received])
    spectrum = numpy.abs(numpy.fft.rfft(signal_ * numpy.hanning(len(signal_))))
    return float(numpy.fft.rfftfreq(len(signal_), 1 / 8000)[int(numpy.argmax(spectrum[10:])) + 10])


def check(label, driver, recording, speech_8k, work):
    heard = read_wav_8k(recording, work, raw48k=True)
    quality = snr(speech_8k, heard)
    received = [frame for frame in frames(driver, "received") if any(frame[1])]
    frequency = strongest_frequency(received)
    print(f"sdk phone: {label}: the SDK phone heard the browser's speech at {quality:.1f} dB SNR; "
          f"the browser received {len(received)} frames of sound, strongest at {frequency:.0f} Hz")
    assert quality > 20, f"{label}: what the SDK phone heard is not the browser's speech ({quality:.1f} dB)"
    assert len(received) >= 100, f"{label}: the browser received only {len(received)} frames of sound"
    assert abs(frequency - TONE) < 15, f"{label}: the browser did not receive the tone ({frequency:.0f} Hz)"


def main():
    binary, out = sys.argv[1], sys.argv[2]
    dev = os.path.join(os.path.dirname(binary), "switchboard-dev")
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="switchboard-sdk-phone-")
    speech, tone = sounds(work, "A browser and a phone, through the relay, both ways round.", raw_tone=True)
    speech_8k = read_wav_8k(speech, work)
    server = Server(binary, work, out)
    base = server.base
    driver, phones = None, []
    try:
        alice, bob = register(base, "alice"), register(base, "bob")
        request = api(base, "POST", "/friend-requests", {"username": "bob"}, alice["token"])
        api(base, "POST", f"/friend-requests/{request['id']}/accept", None, bob["token"])
        driver = browser(speech)
        sign_in(driver, base, "alice", "alice-password")

        # The browser calls the SDK phone, which answers.
        recording = os.path.join(work, "bob-1.raw")
        phone = Phone(dev, base, ["--username", "bob", "--password", "bob-password", "--answer",
                                  "--play", tone, "--record", recording, "--seconds", "5"], out, "phone-answers")
        phones.append(phone)
        wait_for("the SDK phone signed in", lambda: phone.said("signed-in"))
        driver.find_element(By.CSS_SELECTOR, "#friends li[data-username='bob'] button").click()
        wait_for("the SDK phone connected", lambda: phone.said("connected"))
        wait_for("the browser connected", lambda: stage(driver) == "active")
        driver.save_screenshot(os.path.join(out, "browser-calls-sdk.png"))
        phone.finish(60)
        wait_for("the browser's call ended", lambda: stage(driver) in (None, "ended"))
        check("browser → SDK phone", driver, recording, speech_8k, work)

        # The SDK phone calls the browser, which answers.
        recording = os.path.join(work, "bob-2.raw")
        phone = Phone(dev, base, ["--username", "bob", "--password", "bob-password", "--call", "alice",
                                  "--play", tone, "--record", recording, "--seconds", "5"], out, "phone-calls")
        phones.append(phone)
        wait_for("the browser rings", lambda: stage(driver) == "ringing")
        driver.find_element(By.ID, "call-answer").click()
        wait_for("the SDK phone connected", lambda: phone.said("connected"))
        phone.finish(60)
        wait_for("the browser's call ended", lambda: stage(driver) in (None, "ended"))
        check("SDK phone → browser", driver, recording, speech_8k, work)
        assert api(base, "GET", "/calls/active", None, alice["token"]) == []
    finally:
        for phone in phones:
            phone.stop()
        if driver:
            driver.quit()
        server.stop()


if __name__ == "__main__":
    main()
