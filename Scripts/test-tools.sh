#!/usr/bin/env bash
# Installs the Python tools that the tests use as independent judges into .build/test-tools/venv, at
# pinned versions: PyJWT with the cryptography backend (our JWTs), aioapns with h2 and pyOpenSSL (an
# HTTP/2 APNs client, against serve --http2), pushjack with requests (a legacy binary sender, against
# serve and the bridge), prometheus-client (its text-format parser judges GET /metrics).
#
# Idempotent and silent when already installed; parallel callers (several test processes) wait on
# a lock instead of racing. On failure: one line on stderr, exit 1 (the tests then fail with it).
# Needs python3 with the venv module and access to PyPI the first time.
# Usage: Scripts/test-tools.sh   (prints nothing; the interpreter is .build/test-tools/venv/bin/python)
#        Scripts/test-tools.sh --check   (exit 0 when the tools are installed at these versions, else 1;
#                                         installs nothing: Scripts/setup.sh --tests asks it first)
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=(
    PyJWT[crypto]==2.15.1 cryptography==50.0.2 cffi==2.1.1 pycparser==3.12
    aioapns==4.0 h2==4.4.1 hpack==4.2.0 hyperframe==6.1.0 pyOpenSSL==26.4.0 typing-extensions==4.16.0
    pushjack==1.6.0 requests==2.34.2 urllib3==2.8.0 idna==3.20 charset-normalizer==3.5.3 certifi==2026.10.19.post1
    prometheus-client==0.26.0
)
tools=.build/test-tools
venv=$tools/venv
stamp=$venv/installed-requirements.txt
log=$tools/install.log

wanted=$(printf '%s\n' "${requirements[@]}")
installed() { [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; }
if [ "${1:-}" = --check ]; then
    installed
    exit
fi

fail() {
    echo "test-tools: $1" >&2
    exit 1
}

mkdir -p "$tools" || fail "cannot create $tools"
command -v flock >/dev/null 2>&1 || fail "flock is missing (Debian package util-linux)"
exec 9>"$tools/lock"
flock 9

if installed; then
    exit 0
fi

command -v python3 >/dev/null 2>&1 || fail "python3 is missing (needed for the PyJWT cross-checks)"
rm -rf "$venv"
if ! python3 -m venv "$venv" >"$log" 2>&1; then
    fail "python3 -m venv $venv failed (is the venv module installed? Debian: python3-venv): $(tail -n 1 "$log")"
fi
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${requirements[@]}" \
    >>"$log" 2>&1; then
    rm -rf "$venv"
    fail "pip could not install ${requirements[*]} (is PyPI reachable?): $(tail -n 1 "$log")"
fi
if ! "$venv/bin/python" -c 'import jwt, cryptography, aioapns, h2, OpenSSL, pushjack, prometheus_client' >>"$log" 2>&1; then
    rm -rf "$venv"
    fail "PyJWT, aioapns, h2, pyOpenSSL, pushjack or prometheus-client installed but does not import: $(tail -n 1 "$log")"
fi
printf '%s\n' "$wanted" >"$stamp"
