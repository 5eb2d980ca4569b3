#!/usr/bin/env bash
# Fuzzes one target with libFuzzer (swiftc -sanitize=fuzzer,address):
#
#     Scripts/fuzz.sh <target> <seconds> [extra libFuzzer flags]
#
# Targets: frame-decoder, feedback-decoder, error-response, jsonl, pkcs12, provider-server (the server
# side of the HTTP/2 session and the simulator's request handling), provider-response (what the
# HTTP/2 client reads from an answer: :status, apns-id, the JSON body, GOAWAY debug data), channel-api (the
# channel management and broadcast APIs' headers and bodies, through the validator, the simulator's channel
# store and the client's readers; the property checks live
# in Fuzz/Harness/FuzzTargets.swift and are replayed by `swift test` on Fixtures/fuzz). The corpus
# starts from Fixtures/ and grows in .build/fuzz/corpus/<target>; crashing inputs land in
# .build/fuzz/findings/<target>: copy them to Fixtures/fuzz/<target>/ once fixed, so the test suite
# keeps checking them.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: Scripts/fuzz.sh <target> <seconds>}
seconds=${2:?usage: Scripts/fuzz.sh <target> <seconds>}
shift 2
case "$target" in
    frame-decoder | feedback-decoder | error-response | jsonl | pkcs12 | provider-server | provider-response | channel-api) ;;
    *)
        echo "unknown target '$target' (frame-decoder, feedback-decoder, error-response, jsonl, pkcs12, provider-server, provider-response, channel-api)" >&2
        exit 2
        ;;
esac

build=.build/fuzz
modules=$build/modules
binary=$build/fuzz-legacyapns
mkdir -p "$modules"
# CHexDecode (APNsCore's one C dependency) and CFileGuard (APNsRuntime's) have no module map of
# their own: SwiftPM makes one from each include/ folder, so this script writes the same for swiftc.
chex=$build/CHexDecode
cguard=$build/CFileGuard
flags=(-O -sanitize=fuzzer,address -parse-as-library -package-name legacyapns -I "$modules" -I Sources/COpenSSL
    -I Sources/CNGHTTP2 -I "$chex" -I "$cguard")
sources_changed() {
    [ ! -f "$binary" ] || [ -n "$(find Sources Fuzz \( -name '*.swift' -o -name '*.c' -o -name '*.h' \) -newer "$binary" | head -1)" ]
}
if sources_changed; then
    echo "fuzz: building $binary"
    mkdir -p "$chex"
    printf 'module CHexDecode {\n    header "%s"\n    export *\n}\n' "$PWD/Sources/CHexDecode/include/CHexDecode.h" \
        >"$chex/module.modulemap"
    clang -O2 -fsanitize=fuzzer-no-link,address -I Sources/CHexDecode/include -c Sources/CHexDecode/hex_decode.c \
        -o "$build/CHexDecode.o"
    mkdir -p "$cguard"
    printf 'module CFileGuard {\n    header "%s"\n    export *\n}\n' "$PWD/Sources/CFileGuard/include/CFileGuard.h" \
        >"$cguard/module.modulemap"
    clang -O2 -fsanitize=fuzzer-no-link,address -I Sources/CFileGuard/include -c Sources/CFileGuard/file_guard.c \
        -o "$build/CFileGuard.o"
    compile() { # module, sources...
        local module=$1
        shift
        swiftc "${flags[@]}" -c -wmo -module-name "$module" -emit-module -emit-module-path "$modules/$module.swiftmodule" \
            -o "$build/$module.o" "$@"
    }
    compile APNsCore $(find Sources/APNsCore -name '*.swift' | sort)
    compile APNsCredentials $(find Sources/APNsCredentials -name '*.swift' | sort)
    compile APNsRuntime $(find Sources/APNsRuntime -name '*.swift' | sort)
    compile APNsMetrics $(find Sources/APNsMetrics -name '*.swift' | sort)
    compile APNsInbox $(find Sources/APNsInbox -name '*.swift' | sort)
    compile GatewaySimulator $(find Sources/GatewaySimulator -name '*.swift' | sort)
    compile FuzzHarness $(find Fuzz/Harness -name '*.swift' | sort)
    swiftc "${flags[@]}" -module-name FuzzEntry Fuzz/Entry/FuzzEntry.swift "$build"/APNsCore.o \
        "$build"/APNsCredentials.o "$build"/APNsRuntime.o "$build"/APNsMetrics.o "$build"/APNsInbox.o "$build"/GatewaySimulator.o \
        "$build"/FuzzHarness.o \
        "$build"/CHexDecode.o "$build"/CFileGuard.o \
        -lssl -lcrypto -lnghttp2 -lm -o "$binary"
fi

corpus=$build/corpus/$target
findings=$build/findings/$target
mkdir -p "$corpus" "$findings"
seeds=()
case "$target" in
    frame-decoder | error-response) seeds=(Fixtures/frames/*.bin) ;;
    feedback-decoder) seeds=(Fixtures/feedback/*.bin) ;;
    jsonl) seeds=(Fixtures/jsonl/*.jsonl) ;;
    pkcs12) seeds=(Fixtures/certs/*.p12 Fixtures/certs/*.cer Fixtures/certs/*.pem) ;;
    provider-server | provider-response | channel-api) seeds=() ;;
esac
for seed in "${seeds[@]}"; do [ -f "$seed" ] && cp -n "$seed" "$corpus/" || true; done
if [ -d "Fixtures/fuzz/$target" ]; then cp -n Fixtures/fuzz/"$target"/* "$corpus/" 2>/dev/null || true; fi

echo "fuzz: $target for $seconds s"
LEGACY_FUZZ_TARGET=$target ASAN_OPTIONS=detect_leaks=0:handle_abort=1 "$binary" "$corpus" \
    -max_total_time="$seconds" -artifact_prefix="$findings/" -max_len=8192 -timeout=10 -print_final_stats=1 "$@"
