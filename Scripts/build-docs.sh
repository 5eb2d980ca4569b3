#!/usr/bin/env bash
# Builds the DocC documentation of every public module as one static website, with the toolchain's
# own docc (no plugin needed), and fails on any warning, e.g. a link to a symbol that does not
# exist. CI runs it (.ci/run).
#
# Output: .build/docs/site/<Module>/ for each module, and .build/docs/site/index.html linking them.
# Browse it through a web server (DocC pages load their content with JavaScript, so a page opened
# from disk stays blank):
#     cd .build/docs/site && python3 -m http.server 8000
# then open http://localhost:8000/ .
#
# A new module is one line in `modules` below, plus its catalog Sources/<Module>/<Module>.docc.
set -euo pipefail
cd "$(dirname "$0")/.."

modules=(
    APNsCore
    APNsCredentials
    LegacyAPNs
    FeedbackClient
    GatewaySimulator
    HTTP2Client
    LegacyBridge
    APNsMetrics
    APNsInbox
    APNsInput
)

graphs="$PWD/.build/docs-build/symbol-graphs"
site="$PWD/.build/docs/site"
# Symbol graphs are only written when a module compiles, and a module re-exporting another carries
# that one's doc comments as of its own last compile: compile the documented modules afresh.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rm -rf "$site" "$graphs"
mkdir -p "$graphs" "$site"
# Removing only the documented modules' build directories leaves the build database pointing at
# them, and the next run fails ("unable to load output file map"): start from an empty scratch path.
rm -rf .build/docs-build
for module in "${modules[@]}"; do
    swift build --scratch-path .build/docs-build --target "$module" \
        -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" \
        -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public >"$log" 2>&1 || { cat "$log"; exit 1; }
done

index=""
for module in "${modules[@]}"; do
    catalog="Sources/$module/$module.docc"
    [ -d "$catalog" ] || { echo "docs: $catalog is missing (every documented module has a catalog)" >&2; exit 1; }
    rm -rf "${graphs:?}/$module"
    mkdir -p "$graphs/$module"
    # The module's own graph and its extensions of other modules' types (Module@Other).
    cp "$graphs/$module.symbols.json" "$graphs/$module"/
    for extension in "$graphs/$module"@*.symbols.json; do
        [ -e "$extension" ] && cp "$extension" "$graphs/$module"/
    done
    # A client module re-exports APNsCore and APNsCredentials: its page shows of theirs only what
    # its catalog curates (Scripts/docs-filter.py), not every internal of the core.
    case "$module" in
        APNsCore | APNsCredentials) ;;
        *) python3 Scripts/docs-filter.py "$graphs/$module/$module.symbols.json" "$module" "$catalog" ;;
    esac
    docc convert "$catalog" --fallback-display-name "$module" \
        --fallback-bundle-identifier "org.legacyapns.$module" --additional-symbol-graph-dir "$graphs/$module" \
        --transform-for-static-hosting --hosting-base-path "$module" \
        --output-path "$site/$module" --analyze >"$log" 2>&1 || { cat "$log"; exit 1; }
    if grep -q "warning:" "$log"; then
        cat "$log"
        echo "docs: $module: $(grep -c 'warning:' "$log") warnings" >&2
        exit 1
    fi
    lower=$(echo "$module" | tr '[:upper:]' '[:lower:]')
    index+="    <li><a href=\"$module/documentation/$lower/\">$module</a></li>"$'\n'
done

cat >"$site/index.html" <<HTML
<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>LegacyAPNs documentation</title></head>
<body>
  <h1>LegacyAPNs documentation</h1>
  <ul>
$index  </ul>
</body>
</html>
HTML
echo "docs: built ${modules[*]} without warnings into .build/docs/site"
echo "docs: browse with: cd .build/docs/site && python3 -m http.server 8000, then open http://localhost:8000/"
