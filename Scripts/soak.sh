#!/usr/bin/env bash
# Runs the soak test in release mode. Exit 0 only if the ledger shows nothing lost and nothing
# silently duplicated.
#
#   Scripts/soak.sh [--notifications N] [--seed S] [--tls13]
#       the binary client against the gateway simulator (default 500,000 notifications;
#       --tls13: a simulator offering TLS 1.3)
#   Scripts/soak.sh --bridge [--notifications N] [--seed S] [--bad-rate R] [--gone-rate R] [--no-upstream-faults] [--fleet]
#       the bridge path: PushClient -> Bridge -> ProviderSimulator with random GOAWAY, resets, 503
#       and stalls upstream and random bad (BadDeviceToken) and uninstalled (410) tokens (default
#       400,000 notifications, 0.2 % bad, 0.05 % uninstalled), one phase killing `legacy-push bridge`
#       with SIGKILL and restarting it on the same store; see HARDENING.md, "Soak"
#       --fleet: every phase on two bridges sharing one throwaway PostgreSQL database behind
#       HAProxy, bridges drawn at random killed and restarted (needs postgresql and haproxy:
#       Scripts/setup.sh --tests)
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product LegacyAPNsSoak >/dev/null
# The bridge path's kill phase runs the real binary beside the soak.
swift build -c release --product legacy-push >/dev/null
exec .build/release/LegacyAPNsSoak "$@"
