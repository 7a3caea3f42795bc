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


def snr_against(reference, frames_received):
    """SNR (dB) of the received relay frames against the looped 8 kHz reference."""
    import numpy

    return snr(reference, numpy.concatenate([numpy.array(pcm, dtype=float) for _, pcm in frames_received]) / 32768)


def snr(reference, signal_):
    """SNR (dB) of an 8 kHz signal against the looped reference: each second that carries
    sound is aligned on its own (to an eighth of a sample) and scaled, and the median of their
    SNRs is the figure (a jitter buffer that starts, stretches or drops moves the alignment
    between seconds, not within one)."""
    import numpy

    signal_ = numpy.asarray(signal_, dtype=float)
    ref = numpy.array(reference, dtype=float)
    window = 8000
    looped = numpy.tile(ref, int(numpy.ceil((window + len(ref)) / len(ref))) + 1)
    figures = []
    for start in range(0, len(signal_) - window + 1, window):
        piece = signal_[start:start + window]
        if numpy.sqrt(numpy.mean(piece ** 2)) < 0.01:
            continue
        figures.append(_aligned_snr(looped, len(ref), piece))
    assert figures, "no second of sound arrived"
    return float(numpy.median(figures))


def _aligned_snr(looped, period, piece):
    import numpy

    window = len(piece)
    size = 1 << int(numpy.ceil(numpy.log2(period + window)))
    spectrum = numpy.fft.rfft(looped[: period + window], size) * numpy.conj(numpy.fft.rfft(piece, size))
    lag = int(numpy.argmax(numpy.fft.irfft(spectrum, size)[:period]))
    margin = 64
    start = lag + period if lag < margin else lag
    around = looped[start - margin: start + window + margin]
    spectrum = numpy.fft.rfft(around)
    frequencies = numpy.fft.rfftfreq(len(around))
    best = -numpy.inf
    for fraction in numpy.linspace(-1, 1, 17):
        shifted = numpy.fft.irfft(spectrum * numpy.exp(-2j * numpy.pi * frequencies * fraction), len(around))
        aligned = shifted[margin: margin + window]
        gain = numpy.dot(piece, aligned) / max(numpy.dot(aligned, aligned), 1e-12)
        noise = piece - gain * aligned
        best = max(best, 10 * numpy.log10(numpy.dot(piece, piece) / max(numpy.dot(noise, noise), 1e-12)))
    return best


def read_wav_8k(path, work, raw48k=False):
    """The WAV (or, with raw48k, raw 48 kHz s16le mono audio) as 8 kHz floats (sox does the
    rate change)."""
    import wave

    narrow = os.path.join(work, os.path.basename(path) + ".8k.wav")
    source = ["-t", "raw", "-r", "48000", "-e", "signed", "-b", "16", "-c", "1", path] if raw48k else [path]
    subprocess.run(["sox", *source, "-r", "8000", "-b", "16", "-c", "1", narrow], check=True)
    with wave.open(narrow) as handle:
        raw = handle.readframes(handle.getnframes())
    return [int.from_bytes(raw[i:i + 2], "little", signed=True) / 32768 for i in range(0, len(raw), 2)]


def played(driver):
    """What the page's call audio played: (rate, [(time ms, samples)])."""
    rate, pieces = driver.execute_script(
        "const a = window.switchboard.audios[window.switchboard.audios.length - 1];"
        "return [a.sampleRate, a.played.map(p => [p.t, Array.from(p.samples)])];"
    )
    return rate, pieces


def send_to_playout(sent, rate, pieces):
    """Aligns what one page played with what the other sent (both at 8 kHz) and returns the
    played stream (8 kHz) and, per 20 ms piece of sound, the time from its frame's sending to
    the end of its playout (ms): the relay, the jitter buffer and the audio thread, without
    the microphone's and the speaker's own buffers."""
    import numpy

    step = int(round(rate / 8000))
    stream = numpy.concatenate([numpy.array(samples, dtype=float)[::step] for _, samples in pieces])
    per_piece = len(pieces[0][1]) // step
    source = numpy.concatenate([numpy.array(pcm, dtype=float) for _, pcm in sent]) / 32768
    size = 1 << int(numpy.ceil(numpy.log2(len(stream) + len(source))))
    correlation = numpy.fft.irfft(numpy.fft.rfft(source, size) * numpy.conj(numpy.fft.rfft(stream, size)), size)
    shift = int(numpy.argmax(correlation))  # stream[i] ~ source[i + shift] (cyclic)
    if shift > size // 2:
        shift -= size
    delays = []
    for index, (t, samples) in enumerate(pieces):
        if numpy.sqrt(numpy.mean(numpy.array(samples) ** 2)) < 0.01:
            continue
        frame = (index * per_piece + shift) // 160
        if 0 <= frame < len(sent):
            delays.append(t - sent[frame][0])
    return stream, delays


def sounds(work, sentence, raw_tone=False):
    """A spoken sentence (espeak-ng) as a 48 kHz WAV, and 3 s of a 700 Hz tone (a WAV, or with
    raw_tone raw 48 kHz s16le for `switchboard-dev phone`): what the fake microphones play."""
    speech = os.path.join(work, "speech.wav")
    tone = os.path.join(work, "tone.raw" if raw_tone else "tone.wav")
    spoken = os.path.join(work, "spoken.wav")
    subprocess.run(["espeak-ng", "-w", spoken, "-s", "150", sentence], check=True, capture_output=True)
    subprocess.run(["sox", spoken, "-r", "48000", "-b", "16", "-c", "1", speech], check=True)
    kind = ["-t", "raw", "-e", "signed"] if raw_tone else []
    subprocess.run(["sox", "-n", *kind, "-r", "48000", "-b", "16", "-c", "1", tone,
                    "synth", "3", "sine", "700", "vol", "0.3"], check=True)
    return speech, tone
