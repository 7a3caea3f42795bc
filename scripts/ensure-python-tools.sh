#!/usr/bin/env bash
# Installs the Python test tooling (PyPI) the live tests use, only when missing.
set -euo pipefail
# livekit-api: LiveKit's own verifier checks our media tokens.
# h2: the HTTP/2 test server the push transport tests talk to.
# websockets: the independent WebSocket peer of the interoperability tests, both ways.
# cryptography: the reference AES-256-GCM the crypto tests cross-check against, both ways.
# selenium + numpy: the browser tests drive Debian's chromium and measure what crossed a call
#   (Tests/Browser, scripts/browser-tests.sh).
# schemathesis: scripts/api-contract.sh checks the server against openapi.json. Pinned: its
#   checks and its reading of the document change between releases, and the contract run must
#   mean the same thing on every machine.
schemathesis_version=4.32.5
missing=()
# `ensure-python-tools.sh bench`: also what `make bench` needs beyond the tests (with espeak-ng and sox from Debian).
# pesq + numpy: ITU-T P.862 speech quality for `switchboard-dev bench audio` (bench/pesq_score.py).
if [[ "${1:-}" == bench ]]; then
    # ... and the Debian tools bench audio speaks and resamples with.
    "$(dirname "$0")/ensure-deps.sh" espeak-ng sox
    python3 -c "import pesq" >/dev/null 2>&1 || missing+=(pesq)
fi
python3 -c "import numpy" >/dev/null 2>&1 || missing+=(numpy)
python3 -c "import selenium.webdriver" >/dev/null 2>&1 || missing+=(selenium)
python3 -c "import livekit.api" >/dev/null 2>&1 || missing+=(livekit-api)
python3 -c "import h2" >/dev/null 2>&1 || missing+=(h2)
python3 -c "import cryptography.hazmat.primitives.ciphers.aead" >/dev/null 2>&1 || missing+=(cryptography)
python3 -c "import websockets.asyncio.client" >/dev/null 2>&1 || missing+=(websockets)
python3 -c "import schemathesis, sys; sys.exit(schemathesis.__version__ != '$schemathesis_version')" >/dev/null 2>&1 ||
    missing+=("schemathesis==$schemathesis_version")
if ((${#missing[@]})); then
    echo "installing Python test tooling: ${missing[*]}" >&2
    # Debian's own python3 comes without pip, and (PEP 668) refuses installs beside its
    # packages unless told; a Python of one's own (pyenv, a venv) takes them as they are.
    if ! python3 -m pip --version >/dev/null 2>&1; then
        { apt-get update -q && apt-get install -y -q python3-pip; } >&2
    fi
    PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore "${missing[@]}"
fi
