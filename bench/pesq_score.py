#!/usr/bin/env python3
"""Speech quality of a degraded recording against its reference, by ITU-T P.862.

    python3 bench/pesq_score.py REFERENCE.wav DEGRADED.wav [--mode nb|wb]

Both files mono 16-bit PCM WAV at 8 kHz (narrowband, the default) or 16 kHz (wideband).
Prints the MOS-LQO (1.0 to 4.5) on one line. The score is computed by PyPI `pesq`, an
independent implementation of P.862 (its own time alignment included); this script only
reads the files. Used by `switchboard-dev bench audio`.
Exit status: 0 with a score, 1 when the files cannot be scored (too short, silent, wrong
rate), 2 on bad usage or a missing module.
"""

import argparse
import sys
import wave

try:
    import numpy
    from pesq import pesq
except ImportError as e:
    print(f"pesq_score: {e}: install with scripts/ensure-python-tools.sh bench", file=sys.stderr)
    sys.exit(2)


def read(path, rate):
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2:
            raise ValueError(f"{path}: need mono 16-bit PCM")
        if w.getframerate() != rate:
            raise ValueError(f"{path}: {w.getframerate()} Hz, need {rate}")
        frames = w.readframes(w.getnframes())
    return numpy.frombuffer(frames, dtype="<i2").astype(numpy.float32) / 32768.0


def main():
    ap = argparse.ArgumentParser(description="PESQ (ITU-T P.862) MOS-LQO of DEGRADED against REFERENCE")
    ap.add_argument("reference")
    ap.add_argument("degraded")
    ap.add_argument("--mode", choices=["nb", "wb"], default="nb")
    args = ap.parse_args()
    rate = 8000 if args.mode == "nb" else 16000
    try:
        score = pesq(rate, read(args.reference, rate), read(args.degraded, rate), args.mode)
    except Exception as e:  # the library's own errors (no utterance found, ...) and ours
        print(f"pesq_score: cannot score: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print(f"{score:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
