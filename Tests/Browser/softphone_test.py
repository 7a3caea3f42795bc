#!/usr/bin/env python3
"""The softphone at /app/ in a real browser: two headless Chromium users call each other
through the server's relay, and what each hears is what the other's microphone took in.

Each browser's fake microphone plays a WAV file (Chromium's --use-file-for-fake-audio-capture):
Alice speaks (espeak-ng), Bob plays a tone. The pages keep every relay frame they sent and
received (`/app/?record`); the frames Bob received must be Alice's frames, byte for byte and in
order (the relay forwards a two-party call untouched), with the delay from her send to his
receipt measured frame by frame, and the other way round. Then Bob hangs up and both pages and
the server agree the call ended; then a call that drops when Alice's network goes away (the
browser's offline mode) ends cleanly on both sides.

usage: softphone_test.py SWITCHBOARD_BINARY OUT_DIR
Screenshots of each step go to OUT_DIR. Bounded: every wait has a limit; the server and the
browsers are stopped whatever happens.
"""

import os
import statistics
import sys
import tempfile
import time

from selenium.webdriver.common.by import By

from browser_support import (
    Server, api, browser, compare, frames, played, read_wav_8k, register, send_to_playout, sign_in, snr,
    snr_against, sounds, stage, wait_for)

def main():
    binary, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="switchboard-browser-")
    speech, tone = sounds(work, "The phone rings, even locked, on a bad network, and the call connects.")
    speech_8k = read_wav_8k(speech, work)
    server = Server(binary, work, out)
    base = server.base
    drivers = []
    try:
        alice = register(base, "alice")
        bob = register(base, "bob")
        request = api(base, "POST", "/friend-requests", {"username": "bob"}, alice["token"])
        api(base, "POST", f"/friend-requests/{request['id']}/accept", None, bob["token"])

        a, b = browser(speech), browser(tone)
        drivers += [a, b]
        sign_in(a, base, "alice", "alice-password")
        sign_in(b, base, "bob", "bob-password")
        a.save_screenshot(os.path.join(out, "app-signed-in.png"))

        # (a) Alice calls Bob; Bob's page rings; he answers; sound crosses both ways.
        a.find_element(By.CSS_SELECTOR, "#friends li[data-username='bob'] button").click()
        wait_for("Bob's incoming call", lambda: stage(b) == "ringing")
        b.save_screenshot(os.path.join(out, "app-incoming.png"))
        b.find_element(By.ID, "call-answer").click()
        wait_for("both connected", lambda: stage(a) == "active" and stage(b) == "active")
        time.sleep(4)
        a.save_screenshot(os.path.join(out, "app-in-call.png"))
        for speaker, listener, label in [(a, b, "Alice → Bob"), (b, a, "Bob → Alice")]:
            # What arrived first, then what was sent: every frame received was sent before.
            received = frames(listener, "received")
            sent = frames(speaker, "sent")
            matched, delays = compare(sent, received, label)
            assert matched >= 100, f"{label}: only {matched} frames of sound arrived (of {len(sent)} sent)"
            median = statistics.median(delays)
            print(f"softphone: {label}: {matched} frames arrived intact of {len(sent)} sent, "
                  f"send-to-receipt delay median {median:.0f} ms, max {max(delays):.0f} ms")
            assert median < 1000, f"{label}: median delay {median:.0f} ms"
            if speaker is a:
                # What crossed is Alice's voice: the received signal against her microphone's file.
                quality = snr_against(speech_8k, received)
                print(f"softphone: {label}: SNR of what arrived against the microphone's speech {quality:.1f} dB")
                assert quality > 20, f"{label}: SNR {quality:.1f} dB: what arrived is not her speech"
                # And what Bob's speaker played: through his jitter buffer and interpolator.
                rate, pieces = played(listener)
                stream, delays = send_to_playout(sent, rate, pieces)
                heard = snr(speech_8k, stream)
                median = statistics.median(delays)
                print(f"softphone: {label}: what Bob's page played: SNR {heard:.1f} dB against her speech, "
                      f"send to end of playout median {median:.0f} ms (p95 {sorted(delays)[int(0.95 * len(delays))]:.0f} ms)")
                assert heard > 20, f"{label}: what Bob's page played is not her speech ({heard:.1f} dB)"
                assert median < 400, f"{label}: send to playout {median:.0f} ms"
        b.find_element(By.ID, "call-end").click()
        wait_for("both ended", lambda: stage(a) in (None, "ended") and stage(b) in (None, "ended"))
        active = api(base, "GET", "/calls/active", None, alice["token"])
        assert active == [], f"the server still has a live call: {active}"

        # (d) Alice's network goes away mid-call: her page ends the call at once, and the server
        # and Bob's page end it too (her leave once she is back, or the relay's socket closing).
        a.find_element(By.CSS_SELECTOR, "#friends li[data-username='bob'] button").click()
        wait_for("Bob's second incoming call", lambda: stage(b) == "ringing")
        b.find_element(By.ID, "call-answer").click()
        wait_for("both connected again", lambda: stage(a) == "active" and stage(b) == "active")
        a.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
        wait_for("Alice's page ended the call offline", lambda: stage(a) in (None, "ended"))
        a.save_screenshot(os.path.join(out, "app-offline.png"))
        a.set_network_conditions(offline=False, latency=0, download_throughput=-1, upload_throughput=-1)
        wait_for("Bob's page ended the call", lambda: stage(b) in (None, "ended"))
        wait_for("the server ended the call", lambda: api(base, "GET", "/calls/active", None, bob["token"]) == [])
        print("softphone: a call whose network dropped ended on both pages and on the server")
    finally:
        for driver in drivers:
            try:
                driver.quit()
            except Exception:
                pass
        server.stop()

if __name__ == "__main__":
    main()
