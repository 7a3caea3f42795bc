#!/usr/bin/env bash
# Installs the Debian packages the build and the given extras need, only when missing.
# Usage: scripts/ensure-deps.sh [package ...]
set -euo pipefail
missing=()
for package in libsqlite3-dev libpq-dev libssl-dev libcurl4-openssl-dev libnghttp2-dev pkgconf "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
if ((${#missing[@]})); then
    echo "installing: ${missing[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! command -v swift >/dev/null 2>&1; then
    echo "swift is not on PATH: this project needs the Swift 6 toolchain (see README)." >&2
    exit 1
fi
