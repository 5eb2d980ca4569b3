#!/usr/bin/env bash
# Shows that encoding frames allocates nothing per frame: runs the benchmark binary's encode loop
# under valgrind (memcheck counts every malloc) for 1,000 and for 100,000 enhanced frames with a
# pre-serialised 100-byte payload, and compares the heap allocation counts. If encoding allocated
# per frame, the second run would make at least 99,000 more allocations.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product LegacyAPNsBenchmarks >/dev/null
binary=.build/release/LegacyAPNsBenchmarks
count() {
    valgrind --tool=memcheck --leak-check=no "$binary" --encode-only "$1" 2>&1 \
        | sed -n 's/.*total heap usage: \([0-9,]*\) allocs.*/\1/p' | tr -d ,
}
small=$(count 1000)
large=$(count 100000)
echo "heap allocations: ${small} for 1,000 frames, ${large} for 100,000 frames (difference: $((large - small)))"
if [ $((large - small)) -lt 100 ]; then
    echo "encoding is allocation-free per frame"
else
    echo "encoding allocates per frame" >&2
    exit 1
fi
