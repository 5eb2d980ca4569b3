#!/usr/bin/env bash
# Builds the DocC documentation of the LegacyAPNs module with the toolchain's own docc (no plugin
# needed) and fails on any warning, e.g. a link to a symbol that does not exist.
# Output: .build/docs/LegacyAPNs.doccarchive
set -euo pipefail
cd "$(dirname "$0")/.."
graphs="$PWD/.build/docs-build/symbol-graphs"
mkdir -p "$graphs/LegacyAPNs" .build/docs
swift build --scratch-path .build/docs-build --target LegacyAPNs \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" \
    -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public >/dev/null
cp "$graphs"/LegacyAPNs*.symbols.json "$graphs/LegacyAPNs/"
log=$(mktemp)
docc convert Sources/LegacyAPNs/LegacyAPNs.docc --fallback-display-name LegacyAPNs \
    --fallback-bundle-identifier org.legacyapns.LegacyAPNs --additional-symbol-graph-dir "$graphs/LegacyAPNs" \
    --output-path .build/docs/LegacyAPNs.doccarchive --analyze >"$log" 2>&1 || { cat "$log"; exit 1; }
if grep -q "warning:" "$log"; then
    cat "$log"
    echo "docs: $(grep -c 'warning:' "$log") warnings" >&2
    exit 1
fi
echo "docs: built .build/docs/LegacyAPNs.doccarchive without warnings"
