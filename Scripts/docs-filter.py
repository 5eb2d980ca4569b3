#!/usr/bin/env python3
"""Leaves out of a module's symbol graph the re-exported symbols its catalog does not curate.

A client module re-exports APNsCore and APNsCredentials (`@_exported import`), so DocC lists every
public type of theirs on the module's page, internals of other modules included (HTTP2Client's
page showed `FrameDecoder` and `BridgeSenderMachine`). Kept: the module's own symbols and the types
its catalog names (``Name``); a kept symbol's documentation link to a type left out becomes code
voice, so no link breaks. usage: docs-filter.py GRAPH.json MODULE CATALOG_DIR
"""
import glob
import json
import os
import re
import sys

path, module, catalog = sys.argv[1], sys.argv[2], sys.argv[3]
link = re.compile(r"``([A-Za-z_][A-Za-z0-9_]*)")
wanted = set()
for page in glob.glob(os.path.join(catalog, "**", "*.md"), recursive=True):
    with open(page) as file:
        wanted.update(link.findall(file.read()))
with open(path) as file:
    graph = json.load(file)


def origin(symbol):
    uri = symbol.get("location", {}).get("uri", "")
    return uri.split("/Sources/")[-1].split("/")[0] if "/Sources/" in uri else None


by_top = {}
for symbol in graph["symbols"]:
    by_top.setdefault(symbol["pathComponents"][0], []).append(symbol)
kept = {top for top, symbols in by_top.items() if any(origin(s) == module for s in symbols)}
kept |= wanted & set(by_top)
# A kept symbol's link to a type left out becomes code voice (`Name`): no broken link, no warning.
double = re.compile(r"``([A-Za-z_][A-Za-z0-9_]*)([^`]*)``")


def unlink(match):
    name = match.group(1)
    return match.group(0) if name in kept or name not in by_top else f"`{name}{match.group(2)}`"


for top in kept:
    for symbol in by_top[top]:
        for line in symbol.get("docComment", {}).get("lines", []):
            if "``" in line.get("text", ""):
                line["text"] = double.sub(unlink, line["text"])
symbols = [s for top in kept for s in by_top[top]]
ids = {s["identifier"]["precise"] for s in symbols}
left_out = len(graph["symbols"]) - len(symbols)
graph["symbols"] = symbols
graph["relationships"] = [
    r for r in graph["relationships"]
    if r["source"] in ids and (r["target"] in ids or r["kind"] in ("conformsTo", "inheritsFrom"))
]
with open(path, "w") as file:
    json.dump(graph, file)
print(f"docs: {module}: {left_out} re-exported symbols no page curates left out", file=sys.stderr)
