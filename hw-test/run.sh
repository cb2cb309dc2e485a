#!/usr/bin/env bash
# The hardware-in-the-loop suite, inside a private user, network and mount namespace: boards are
# network namespaces on a bridge, and no packet can leave this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f dist/ews.js ] || npm run build
# HW_PATTERN=<regex> runs only the tests whose name matches (e.g. HW_PATTERN=saturated).
files="${*:-hw-test/*.test.ts}"
exec unshare -rnm sh -c "mount -t tmpfs tmpfs /run && mkdir -p /run/netns && node --import tsx --test --test-concurrency=1 ${HW_PATTERN:+--test-name-pattern=$HW_PATTERN} $files"
