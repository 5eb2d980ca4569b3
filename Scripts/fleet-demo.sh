#!/usr/bin/env bash
# A fleet of bridges on this machine, end to end, with nothing left behind:
#
#   Scripts/fleet-demo.sh [--notifications N]
#
# a throwaway PostgreSQL cluster (run as the postgres user when started as root), a local
# `serve --http2` that refuses every 100th token and reports a few as uninstalled (410), two
# `legacy-push bridge` processes sharing the database, and HAProxy (mode tcp, round robin, health
# checks) in front of them. Our binary `send` pushes N notifications (default 20,000) through the
# balancer; halfway, bridge A is killed with SIGKILL and restarted. Then the feedback service is
# read through the balancer. Prints the sender's summary, what each bridge said, and the 410s
# read back. Needs Scripts/setup.sh --tests (postgresql, haproxy) and a debug build.
set -euo pipefail
cd "$(dirname "$0")/.."
count=20000
[ "${1:-}" = "--notifications" ] && count="$2"

swift build --product legacy-push >/dev/null
bin="$PWD/.build/debug/legacy-push"
certs="$PWD/Fixtures/certs"
work="$(mktemp -d /tmp/legacy-push-fleet.XXXXXX)"
chmod 755 "$work"  # the postgres user runs the cluster inside it
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [ -f "$work/pg/data/postmaster.pid" ] && as_postgres /usr/lib/postgresql/15/bin/pg_ctl -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; echo "fleet-demo: no '$2' in $1" >&2; exit 1; }

echo "fleet-demo: a throwaway PostgreSQL cluster in $work/pg"
mkdir -p "$work/pg" && [ "$(id -u)" = 0 ] && chown postgres: "$work/pg"
as_postgres /usr/lib/postgresql/15/bin/initdb -D "$work/pg/data" -A trust -U postgres --no-sync >/dev/null
pg_port=$(free_port)
as_postgres /usr/lib/postgresql/15/bin/pg_ctl -D "$work/pg/data" -l "$work/pg/server.log" -w \
    -o "-k $work/pg -p $pg_port -c listen_addresses=127.0.0.1" start >/dev/null
store="postgresql://postgres@127.0.0.1:$pg_port/postgres"

token() { printf 'ab%.0s' $(seq 28); printf '%08x' "$1"; }
fail=() gone=()
for ((i = 50; i < count; i += 100)); do fail+=(--fail-token "$(token "$i")"); done
for i in 7 777 7777; do [ "$i" -lt "$count" ] && gone+=(--unregistered "$(token "$i"):1767225600000"); done
upstream_port=$(free_port)
"$bin" serve --http2 --port "$upstream_port" --quiet --auth-key "ABC123DEFG:DEF123GHIJ:$certs/AuthKey_ABC123DEFG.p8" \
    "${fail[@]}" "${gone[@]}" >"$work/serve.log" 2>&1 &
pids+=($!)
wait_for "$work/serve.log" "listening on"

# One session ticket key for the fleet: a sender that reconnects to the other bridge resumes its
# TLS session there instead of repeating the certificate handshake.
(umask 077 && head -c 80 /dev/urandom >"$work/session-ticket.key")

declare -A gateway feedback
start_bridge() {
    "$bin" bridge --port "${gateway[$1]}" --feedback-port "${feedback[$1]}" --upstream "127.0.0.1:$upstream_port" \
        --upstream-ca-file "$certs/ca.pem" --auth-key "$certs/AuthKey_ABC123DEFG.p8" --team-id DEF123GHIJ \
        --topic com.example.legacy --store "$store" --session-ticket-key "$work/session-ticket.key" \
        >>"$work/bridge-$1.log" 2>&1 &
    eval "bridge_$1=$!"
    pids+=($!)
    wait_for "$work/bridge-$1.log" "feedback on"
}
for name in a b; do
    gateway[$name]=$(free_port) feedback[$name]=$(free_port)
    start_bridge "$name"
done

lb_gateway=$(free_port) lb_feedback=$(free_port)
# The fleet's HAProxy configuration, rendered from the one the tests and the benchmark use.
{
    while IFS= read -r line; do
        case "$line" in
            @BRIDGES@) for name in a b; do echo "    server $name 127.0.0.1:${gateway[$name]} check inter 200ms fall 2 rise 1"; done ;;
            @FEEDBACKS@) for name in a b; do echo "    server $name 127.0.0.1:${feedback[$name]} check inter 200ms fall 2 rise 1"; done ;;
            *) line="${line//@GATEWAY_PORT@/$lb_gateway}"; echo "${line//@FEEDBACK_PORT@/$lb_feedback}" ;;
        esac
    done <Fixtures/haproxy/fleet.cfg.in
} >"$work/haproxy.cfg"
haproxy -db -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 &
pids+=($!)
sleep 0.5
echo "fleet-demo: PostgreSQL :$pg_port, serve --http2 :$upstream_port, bridges a :${gateway[a]} b :${gateway[b]}," \
    "HAProxy :$lb_gateway (feedback :$lb_feedback)"

for ((i = 0; i < count; i++)); do
    printf '{"token":"%s","payload":{"aps":{"alert":"fleet %d"}},"id":%d}\n' "$(token "$i")" "$i" "$i"
done >"$work/input.jsonl"
credentials=(--ca-file "$certs/ca.pem" --cert "$certs/universal-modern.p12" --passphrase-file "$certs/passphrase.txt")
"$bin" send --gateway "127.0.0.1:$lb_gateway" --input "$work/input.jsonl" "${credentials[@]}" --json --quiet \
    >"$work/send.jsonl" 2>"$work/send.err" &
sender=$!
sleep 1
echo "fleet-demo: kill -9 bridge a (pid $bridge_a), restarting it"
kill -9 "$bridge_a"
{ wait "$bridge_a"; } 2>/dev/null || true
sleep 0.3
start_bridge a
status=0
wait "$sender" || status=$?
echo "fleet-demo: send exited $status (1: some were rejected, as the bad tokens are)"
tail -1 "$work/send.jsonl"
echo "fleet-demo: 410s read back through the balancer:"
for _ in 1 2 3; do "$bin" feedback --feedback "127.0.0.1:$lb_feedback" "${credentials[@]}"; done
kill -INT "$bridge_a" "$bridge_b"
wait "$bridge_a" "$bridge_b" 2>/dev/null || true
for name in a b; do echo "fleet-demo: bridge $name: $(grep -h '^stopped: ' "$work/bridge-$name.log" | tail -1)"; done
