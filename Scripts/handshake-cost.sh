#!/usr/bin/env bash
# What a TLS reconnect costs in OpenSSL alone (no Swift, no LegacyAPNs), to tell the library's
# overhead from the TLS library's. Compiles Scripts/handshake-cost.c against the system OpenSSL and
# runs it for TLS 1.2 and TLS 1.3, full and resumed handshakes. With --callgrind it also counts
# instructions per resumed connection under valgrind (slow: about a minute).
#
#   Scripts/handshake-cost.sh [--callgrind] [COUNT]
set -euo pipefail
cd "$(dirname "$0")/.."
callgrind=0
if [[ "${1:-}" == "--callgrind" ]]; then callgrind=1; shift; fi
count="${1:-2000}"
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
cc -O2 -Wall -o "$build/handshake-cost" Scripts/handshake-cost.c -lssl -lcrypto -lpthread
openssl version
for version in tls1.2 tls1.3; do
    "$build/handshake-cost" Fixtures/certs $((count / 10)) "$version" full
    "$build/handshake-cost" Fixtures/certs "$count" "$version" resumed
done
if [[ $callgrind == 1 ]]; then
    command -v valgrind >/dev/null || { echo "handshake-cost: valgrind is not installed" >&2; exit 1; }
    for version in tls1.2 tls1.3; do
        valgrind --tool=callgrind --callgrind-out-file="$build/$version.out" \
            "$build/handshake-cost" Fixtures/certs 200 "$version" resumed >/dev/null 2>"$build/$version.log"
        total=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$build/$version.log")
        [[ -n "$total" ]] || total=$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$build/$version.out")
        echo "$version resumed under callgrind: $((total / 200)) instructions per connection (client + server)"
        if command -v callgrind_annotate >/dev/null; then
            callgrind_annotate --inclusive=yes "$build/$version.out" 2>/dev/null |
                grep -E 'EVP_PKEY_generate|EVP_PKEY_derive|EVP_KDF_derive|X509_verify_cert' | head -4 |
                sed 's/^/    /' || true
        fi
    done
fi
