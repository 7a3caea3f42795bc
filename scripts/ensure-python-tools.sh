#!/usr/bin/env bash
# Installs the Python test tooling (PyPI) the live tests use, only when missing.
set -euo pipefail
if ! python3 -c "import livekit.api" >/dev/null 2>&1; then
    echo "installing livekit-api (test tooling: verifies media tokens with LiveKit's own verifier)" >&2
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore livekit-api
fi
