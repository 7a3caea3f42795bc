#!/usr/bin/env bash
# Type-checks the iOS code against Apple's real iPhoneOS SDK interfaces, on Linux:
#  1. the SDK modules (SwitchboardWire, SwitchboardKit, SwitchboardCallKit) through the
#     maintainers' ios-sdk-typecheck.sh (outside this repository; docs/sdk.md, "Which iOS versions"),
#  2. the example app, Examples/SwitchboardPhone (SwiftUI, UIKit, PushKit, CallKit, Security),
#     against the modules step 1 built, with availability checks on.
# Nothing is linked or run. Not part of `make test`: it needs a copy of github.com/theos/sdks.
#
# Usage, from anywhere in the repository:
#   MIRROR=<git dir of theos/sdks> scripts/ios-typecheck.sh
# env: MIRROR (required), TOOL (default ../shared/tools/ios-sdk-typecheck.sh beside the
#   repository), ROOT (work dir, default .build/ios-sdk-check), TARGETS (deployment targets,
#   default "18.0 17.0 16.0"), SWIFTBIN (the 6.3.1 toolchain's bin, default from PATH).
#
# SwitchboardCallKit is checked twice by the tool: as it is, and with its `#if compiler(>=6.2)`
# and `#if compiler(>=6.3)` branches switched to their `#else` (the pre-iOS-26 SDK path). As
# it is, it has two errors that are artefacts of the SDK copy, not mismatches in our code: the
# checker's compiler is 6.3, so it takes the branches written for the iOS 26 SDK that Xcode 26
# ships with Swift 6.2/6.3 (`.allowBluetoothHFP`, `PKVoIPPushMetadata`), but the SDK it has is
# iOS 16.4, which lacks both. They are reported apart as "known"; the variant must have none.
#
# Prints one line per module and target; exits 1 if any error is not a known artefact.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
MIRROR=${MIRROR:?set MIRROR to the git directory of a copy of github.com/theos/sdks}
TOOL=${TOOL:-$REPO/../shared/tools/ios-sdk-typecheck.sh}
ROOT=${ROOT:-$REPO/.build/ios-sdk-check}
TARGETS=${TARGETS:-"18.0 17.0 16.0"}
SWIFTBIN=${SWIFTBIN:-$(dirname "$(command -v swiftc)")}
EXAMPLE=$REPO/Examples/SwitchboardPhone/SwitchboardPhone
[ -f "$TOOL" ] || { echo "ios-typecheck: no tool at $TOOL (set TOOL)" >&2; exit 2; }
export PATH=$SWIFTBIN:$PATH

# The two known artefacts, as file and message (the line numbers may move).
KNOWN=(
  "AudioSessionConfigurator.swift:[0-9]+:[0-9]+: error: type 'AVAudioSession.CategoryOptions' has no member 'allowBluetoothHFP'"
  "VoIPPushReceiver.swift:[0-9]+:[0-9]+: error: cannot find type 'PKVoIPPushMetadata' in scope"
)
ERROR_LINE='^[^ ]+:[0-9]+:[0-9]+: error: '

# 1. The SDK modules (the tool also extracts and patches the SDK on its first run).
echo "== SDK modules (ios-sdk-typecheck.sh; full output in $ROOT/tool.txt)"
mkdir -p "$ROOT"
(cd "$REPO" && MIRROR=$MIRROR ROOT=$ROOT SRC=$REPO/Sources TARGETS=$TARGETS SWIFTBIN=$SWIFTBIN bash "$TOOL") > "$ROOT/tool.txt" 2>&1
tool_rc=$?
SDK=$ROOT/iPhoneOS16.5.sdk
if [ ! -d "$SDK" ] || [ ! -d "$ROOT/res" ]; then
  echo "ios-typecheck: the tool did not prepare the SDK (rc=$tool_rc):" >&2
  tail -20 "$ROOT/tool.txt" >&2
  exit 2
fi

unexpected=0
# count LOG: prints "<errors> <known>"; known = lines matching one of KNOWN.
count() {
  local log=$1 all known=0 pattern
  all=$(grep -cE "$ERROR_LINE" "$log" 2>/dev/null)
  for pattern in "${KNOWN[@]}"; do
    known=$((known + $(grep -cE "$pattern" "$log" 2>/dev/null)))
  done
  echo "${all:-0} $known"
}
# report LABEL LOG ALLOW_KNOWN(1/0)
report() {
  local label=$1 log=$2 allow=$3 all known
  if [ ! -f "$log" ]; then
    echo "   $label: no log ($log)"
    unexpected=$((unexpected + 1))
    return
  fi
  read -r all known < <(count "$log")
  [ "$allow" = 1 ] || known=0
  local other=$((all - known))
  if [ "$known" -gt 0 ]; then
    echo "   $label: $all errors, $known known SDK-copy artefacts, $other unexpected"
    grep -E "$ERROR_LINE" "$log" | grep -E "$(IFS='|'; echo "${KNOWN[*]}")" | sed 's/^/      known: /'
  else
    echo "   $label: $all errors"
  fi
  if [ "$other" -gt 0 ]; then
    grep -E "$ERROR_LINE" "$log" | { if [ "$allow" = 1 ]; then grep -vE "$(IFS='|'; echo "${KNOWN[*]}")"; else cat; fi; } |
      head -30 | sed 's/^/      /'
  fi
  unexpected=$((unexpected + other))
}

# The example imports SwiftUI, which imports CoreTransferable, which imports the `os` Swift
# overlay. The 16.4 SDK's os.swiftinterface (Swift 5.8) calls `___os_log_impl` and
# `___os_signpost_emit_with_name_impl`, the names of the C functions when the API notes make
# them SwiftPrivate, as the 5.8 toolchain's did; the tool's os.apinotes, from a newer swiftlang,
# makes them `nonswift`, and the overlay does not build. So the example gets a resource dir of
# its own [ios-typecheck] with those two entries as in 5.8 (everything else the tool's), and a
# module cache of its own (the first run rebuilds the SDK's modules there: a few minutes).
RES=$ROOT/res-example
mkdir -p "$RES/apinotes"
for link in clang shims host; do ln -sfn "$(readlink "$ROOT/res/$link")" "$RES/$link"; done
cp "$ROOT/res/apinotes/Dispatch.apinotes" "$RES/apinotes/Dispatch.apinotes"
python3 - "$ROOT/res/apinotes/os.apinotes" "$RES/apinotes/os.apinotes" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
for name in ("_os_log_impl", "_os_signpost_emit_with_name_impl"):
    entry = re.compile(r"(- Name: %s\n)  Availability: nonswift\n  AvailabilityMsg: '[^']*'\n" % re.escape(name))
    text, n = entry.subn(r"\1  SwiftPrivate: true  # [ios-typecheck] as in the Swift 5.8 toolchain\n", text)
    assert n == 1, name
open(sys.argv[2], "w").write(text)
PY
[ $? = 0 ] || { echo "ios-typecheck: the tool's os.apinotes changed; adjust the example's copy" >&2; exit 2; }
# One more: the SwiftUI interface's `Environment.wrappedValue` logs a runtime warning with
# `os_log(.fault, log:, "…\(Value.self)…")`, an interpolation Swift 5.8 took as an OSLogMessage
# and Swift 6.3 refuses ("string interpolation cannot be used in this context"), so SwiftUI
# does not build from its interface. The example sees a copy of that interface, found first
# on its import path, with the interpolation left out of the message; no declaration changes.
OVERRIDES=$ROOT/example-overrides
mkdir -p "$OVERRIDES/SwiftUI.swiftmodule"
python3 - "$SDK/System/Library/Frameworks/SwiftUI.framework/Modules/SwiftUI.swiftmodule/arm64-apple-ios.swiftinterface" \
  "$OVERRIDES/SwiftUI.swiftmodule/arm64-apple-ios.swiftinterface" <<'PY'
import sys
text = open(sys.argv[1]).read()
old = "Accessing Environment<\\(Value.self)>'s value"
assert text.count(old) == 1, "SwiftUI interface changed"
text = text.replace(old, "Accessing Environment's value")
lines = text.split("\n")
lines.insert(4, "// [ios-typecheck] copy of the SDK's interface, one os_log interpolation removed (see scripts/ios-typecheck.sh)")
open(sys.argv[2], "w").write("\n".join(lines))
PY
[ $? = 0 ] || { echo "ios-typecheck: could not prepare the SwiftUI interface copy" >&2; exit 2; }
BASE=(-sdk "$SDK" -resource-dir "$RES" -module-cache-path "$ROOT/mc-example" -I "$OVERRIDES")
mapfile -t EXAMPLE_FILES < <(find "$EXAMPLE" -name '*.swift' | sort)
mapfile -t EXTENSION_FILES < <(find "$EXAMPLE/../SwitchboardPhoneDirectory" -name '*.swift' | sort)
for ver in $TARGETS; do
  L=$ROOT/logs/ios$ver
  echo "== arm64-apple-ios$ver"
  report "SwitchboardWire" "$L-wire.txt" 0
  report "SwitchboardKit" "$L-kit.txt" 0
  report "SwitchboardCallKit (as is)" "$L-callkit.txt" 1
  report "SwitchboardCallKit (pre-iOS-26 SDK branches)" "$L-callkit-variant.txt" 0
  # 2. The example app, against the modules the tool left in out-$ver (SwitchboardCallKit
  #    from its variant run, the one that builds with this SDK).
  out=$ROOT/out-$ver
  if [ -f "$out/SwitchboardCallKit.swiftmodule" ] && [ -f "$out/SwitchboardKit.swiftmodule" ]; then
    swiftc -typecheck -parse-as-library -swift-version 6 -target "arm64-apple-ios$ver" "${BASE[@]}" -I "$out" \
      -Xfrontend -import-module -Xfrontend StdlibBackports \
      -module-name SwitchboardPhone "${EXAMPLE_FILES[@]}" > "$L-example.txt" 2>&1
    report "SwitchboardPhone example (${#EXAMPLE_FILES[@]} files)" "$L-example.txt" 0
    warnings=$(grep -cE '^[^ ]+:[0-9]+:[0-9]+: warning: ' "$L-example.txt")
    [ "$warnings" -gt 0 ] && grep -E '^[^ ]+:[0-9]+:[0-9]+: warning: ' "$L-example.txt" | head -10 | sed 's/^/      /'
    echo "      ($warnings warnings)"
    swiftc -typecheck -parse-as-library -swift-version 6 -target "arm64-apple-ios$ver" "${BASE[@]}" -I "$out" \
      -Xfrontend -import-module -Xfrontend StdlibBackports \
      -module-name SwitchboardPhoneDirectory "${EXTENSION_FILES[@]}" > "$L-example-directory.txt" 2>&1
    report "SwitchboardPhoneDirectory extension (${#EXTENSION_FILES[@]} files)" "$L-example-directory.txt" 0
  else
    echo "   SwitchboardPhone example: not checked, the SDK modules did not build (see $ROOT/tool.txt)"
    unexpected=$((unexpected + 1))
  fi
done
echo "== logs under $ROOT/logs"
if [ "$unexpected" -gt 0 ]; then
  echo "ios-typecheck: $unexpected unexpected errors"
  exit 1
fi
echo "ios-typecheck: no errors beyond the known SDK-copy artefacts"
