#!/usr/bin/env bash
# Points a third-party legacy APNs client from PyPI (pushjack 1.6.0, which speaks the binary
# protocol with item frames and reads error responses) at `legacy-push serve`, and checks that it
# sees what it saw against Apple's gateway: one bad token rejected with status 8, every other
# notification accepted exactly once.
#
# Needs network access to PyPI (so it is not part of CI). Usage: Scripts/third-party-client.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

swift build --product legacy-push >/dev/null
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet pushjack==1.6.0

bad=00000000000000000000000000000000000000000000000000000000000000bd
.build/debug/legacy-push serve --port 0 --no-feedback --record "$work/accepted.jsonl" \
    --fail-token "$bad:8" >"$work/serve.out" 2>"$work/serve.err" &
server=$!
for _ in $(seq 100); do grep -q '^listening on' "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/^listening on 127.0.0.1://p' "$work/serve.out")
echo "simulator on 127.0.0.1:$port"

"$work/venv/bin/python" - "$port" "$bad" <<'PY'
import sys
from pushjack import APNSClient
port, bad = int(sys.argv[1]), sys.argv[2]

class LocalClient(APNSClient):
    host = "127.0.0.1"
    port = port

tokens = ["%064x" % (0xA000 + i) for i in range(20)]
tokens[7] = bad
client = LocalClient(certificate="Fixtures/certs/universal-combined.pem", default_error_timeout=1)
response = client.send(tokens, "Hello from pushjack", badge=1)
print("pushjack errors:", [(type(e).__name__, e.identifier) for e in response.errors])
assert len(response.errors) == 1, response.errors
assert response.errors[0].identifier == 7, response.errors
assert type(response.errors[0]).__name__ == "APNSInvalidTokenError"
PY

kill -INT "$server"
wait "$server"
accepted=$(wc -l <"$work/accepted.jsonl")
unique=$(sort -u "$work/accepted.jsonl" | wc -l)
echo "simulator recorded $accepted accepted notifications ($unique distinct)"
grep 'rejected' "$work/serve.err"
[ "$accepted" -eq 19 ] && [ "$unique" -eq 19 ] && ! grep -q "\"$bad\"" "$work/accepted.jsonl"
echo "third-party client check: OK"
