#!/usr/bin/env bash
# Installs what this package needs on a Debian or Ubuntu machine that has only Swift, through apt
# (with sudo when not root). The one list of the project's system packages: README.md's first two
# commands and .ci/run call it, and a test (SetupScriptTests) checks that it covers every system
# library target of Package.swift and every program the tests run.
#
#     Scripts/setup.sh              what `swift build` / `swift run legacy-push demo` needs
#     Scripts/setup.sh --tests      that, and what `swift test` needs, and the Python judges
#     Scripts/setup.sh --dry-run    say what would be installed and why; change nothing
#     Scripts/setup.sh --list       print the list (package, purpose, why), one a line, tab-separated
#
# It says what it installs and why before doing it, installs only what is missing, and prints
# nothing and takes well under a second when everything is there. The first run needs Debian's
# package mirror; with --tests also PyPI (the judges go into a venv under .build/test-tools, see
# Scripts/test-tools.sh). Exit 1 with one `setup: ...` line on stderr when it cannot install.
set -euo pipefail
cd "$(dirname "$0")/.."

# package <tab> purpose (build: swift build; tests: swift test) <tab> why. A new system library
# target in Package.swift adds its `providers: [.apt([...])]` here; a new program the tests start
# adds the package that ships it.
packages="\
pkg-config	build	finds the C libraries of Package.swift's system library targets
libssl-dev	build	OpenSSL headers and libraries (COpenSSL: TLS, certificates, .p12, JWT signing)
libnghttp2-dev	build	nghttp2 headers and library (CNGHTTP2: the HTTP/2 client, simulator and bridge)
libsqlite3-dev	build	SQLite headers and library (CSQLite: the bridge's feedback store)
libpq-dev	build	PostgreSQL's client library (CLibPQ: the shared store of a fleet of bridges)
openssl	tests	the openssl command, which the tests use to make and check keys and certificates
nghttp2-client	tests	nghttp and h2load, independent HTTP/2 clients the tests run against serve --http2
nghttp2-server	tests	nghttpd, an independent HTTP/2 server the tests run our client against
curl	tests	curl --http2, another independent client of serve --http2
postgresql	tests	a throwaway PostgreSQL 15 server the fleet tests start as the postgres user
haproxy	tests	the TCP load balancer the fleet tests put in front of two bridges
git	tests	the README test checks with git status that the README's commands leave the checkout clean
tinyproxy	tests	a real HTTP proxy (CONNECT, BasicAuth) that send --http2 and the bridge tunnel through in the tests
chromium	tests	headless Chromium, the real browser the inbox page test loads against a running simulator
python3	tests	runs the Python judges (PyJWT, aioapns, h2, pushjack, prometheus-client)
python3-venv	tests	python3 -m venv, for the judges' venv in .build/test-tools"

usage() {
    echo "usage: Scripts/setup.sh [--tests] [--dry-run] [--list]" >&2
    exit 2
}

tests=false dry_run=false list=false
for argument in "$@"; do
    case "$argument" in
        --tests) tests=true ;;
        --dry-run) dry_run=true ;;
        --list) list=true ;;
        -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' && exit 0 ;;
        *) usage ;;
    esac
done

fail() {
    echo "setup: $1" >&2
    exit 1
}

wanted() { [ "$1" = build ] || $tests; }

if $list; then
    while IFS=$'\t' read -r package purpose why; do
        wanted "$purpose" && printf '%s\t%s\t%s\n' "$package" "$purpose" "$why"
    done <<<"$packages"
    exit 0
fi

# What is missing: one dpkg-query for the whole list (a package it does not know is missing too).
names=()
while IFS=$'\t' read -r package purpose _; do
    wanted "$purpose" && names+=("$package")
done <<<"$packages"
installed=$(dpkg-query -W -f '${Package} ${db:Status-Status}\n' "${names[@]}" 2>/dev/null || true)
missing=()
while IFS=$'\t' read -r package purpose why; do
    wanted "$purpose" || continue
    grep -qxF "$package installed" <<<"$installed" && continue
    missing+=("$package")
    $dry_run && verb="would install" || verb="installing"
    echo "setup: $verb $package: $why"
done <<<"$packages"

if [ ${#missing[@]} -gt 0 ] && ! $dry_run; then
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || fail "not root and no sudo: run as root, or install ${missing[*]} with apt-get"
        sudo=(sudo)
    fi
    log=.build/setup-apt.log
    mkdir -p .build
    echo "setup: apt-get update && apt-get install ${missing[*]} (log: $log)"
    if ! { "${sudo[@]}" apt-get update && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y \
        --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
        fail "apt-get could not install ${missing[*]}: $(tail -n 1 "$log")"
    fi
fi

# The Python judges: PyPI packages into a venv under .build (Scripts/test-tools.sh), for --tests.
judges_missing=false
if $tests && ! Scripts/test-tools.sh --check; then judges_missing=true; fi
if $judges_missing; then
    if $dry_run; then
        echo "setup: would install the Python judges from PyPI into .build/test-tools/venv (Scripts/test-tools.sh)"
    else
        echo "setup: installing the Python judges from PyPI into .build/test-tools/venv (Scripts/test-tools.sh)"
        Scripts/test-tools.sh
    fi
elif $dry_run && [ ${#missing[@]} -eq 0 ]; then
    echo "setup: nothing to install"
fi
