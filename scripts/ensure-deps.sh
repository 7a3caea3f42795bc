#!/usr/bin/env bash
# Installs the Debian packages the build and the given extras need, only when missing.
# Usage: scripts/ensure-deps.sh [package ...]
set -euo pipefail
missing=()
for package in libsqlite3-dev libpq-dev libmaxminddb-dev libssl-dev libcurl4-openssl-dev libnghttp2-dev pkgconf "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
if ((${#missing[@]})); then
    echo "installing: ${missing[*]}" >&2
    # Packages that come with a service (nginx) must not start it: the tests run their own.
    policy=/usr/sbin/policy-rc.d
    placed=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && placed=1
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    if ((placed)); then rm -f "$policy"; fi
fi
if ! command -v swift >/dev/null 2>&1; then
    echo "swift is not on PATH: this project needs the Swift 6 toolchain (see README)." >&2
    exit 1
fi
