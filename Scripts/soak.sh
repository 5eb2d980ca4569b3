#!/usr/bin/env bash
# Runs the soak test in release mode (default 500,000 notifications; pass --notifications N,
# --seed S, and --tls13 for a simulator offering TLS 1.3). Exit 0 only if the ledger shows nothing lost and nothing silently duplicated.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product LegacyAPNsSoak >/dev/null
exec .build/release/LegacyAPNsSoak "$@"
