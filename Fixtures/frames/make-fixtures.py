#!/usr/bin/env python3
"""Writes the normative frame fixtures: annotated *.hex files derived from the byte layouts in
PROTOCOL.md (one field a line, '#' comments), their *.bin twins, and manifest.jsonl, which says
what each fixture holds so tests can encode it and compare.

This is an independent, hand-written rendering of the spec: it does not use the Swift encoder.
Run it from anywhere: python3 Fixtures/frames/make-fixtures.py
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = bytes.fromhex("740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad")
TOKEN2 = bytes.fromhex("0000000000000000000000000000000000000000000000000000000000000001")
LONG_TOKEN = bytes(range(100))

manifest = []


def hexline(data, comment):
    """One field: its bytes in hex (wrapped at 32 bytes a line), then a comment."""
    if not data:
        return f"{'':<48}# {comment}"
    chunks = [data[i:i + 32] for i in range(0, len(data), 32)]
    lines = []
    for index, chunk in enumerate(chunks):
        text = " ".join(f"{b:02x}" for b in chunk)
        if index == 0:
            lines.append(f"{text:<47} # {comment}" if len(text) < 48 else f"{text}  # {comment}")
        else:
            lines.append(text)
    return "\n".join(lines)


def show(payload):
    text = payload.decode("utf-8", errors="replace")
    return text if len(text) <= 60 else text[:57] + "..."


def simple_fields(token, payload):
    return [
        (b"\x00", "command 0: simple"),
        (struct.pack(">H", len(token)), f"token length: {len(token)}"),
        (token, "token"),
        (struct.pack(">H", len(payload)), f"payload length: {len(payload)}"),
        (payload, f"payload: {show(payload)}"),
    ]


def enhanced_fields(identifier, expiry, token, payload):
    expiry_note = "0 (do not store)" if expiry == 0 else str(expiry)
    return [
        (b"\x01", "command 1: enhanced"),
        (struct.pack(">I", identifier), f"identifier: {identifier}"),
        (struct.pack(">I", expiry), f"expiry: {expiry_note}"),
        (struct.pack(">H", len(token)), f"token length: {len(token)}"),
        (token, "token"),
        (struct.pack(">H", len(payload)), f"payload length: {len(payload)}"),
        (payload, f"payload: {show(payload)}"),
    ]


def item(item_id, data, name):
    return [
        (bytes([item_id]) + struct.pack(">H", len(data)), f"item {item_id} ({name}), length {len(data)}"),
        (data, f"  {name}" + (f": {show(data)}" if item_id == 2 else "")),
    ]


def frame_fields(token, payload, identifier=None, expiry=None, priority=None):
    items = item(1, token, "device token") + item(2, payload, "payload")
    if identifier is not None:
        items += item(3, struct.pack(">I", identifier), f"identifier {identifier}")
    if expiry is not None:
        items += item(4, struct.pack(">I", expiry), f"expiry {expiry}")
    if priority is not None:
        items += item(5, bytes([priority]), f"priority {priority}")
    length = sum(len(data) for data, _ in items)
    return [(b"\x02", "command 2: item frame"), (struct.pack(">I", length), f"frame length: {length}")] + items


def write(name, title, fields, entry):
    data = b"".join(data for data, _ in fields)
    with open(os.path.join(HERE, name + ".hex"), "w") as out:
        out.write(f"# {name}: {title}\n# {len(data)} bytes; all integers big-endian\n")
        for field, comment in fields:
            out.write(hexline(field, comment) + "\n")
    with open(os.path.join(HERE, name + ".bin"), "wb") as out:
        out.write(data)
    entry = dict(name=name, **entry)
    manifest.append(entry)


def notification(name, title, fmt, token, payload, identifier=None, expiry=None, priority=None):
    if fmt == "simple":
        fields = simple_fields(token, payload)
    elif fmt == "enhanced":
        fields = enhanced_fields(identifier, expiry, token, payload)
    else:
        fields = frame_fields(token, payload, identifier, expiry, priority)
    write(name, title, fields, dict(
        kind="notification", format=fmt, token=token.hex(), payload=payload.decode("utf-8"),
        id=identifier, expiry=expiry, priority=priority))


def padded(size):
    """A valid JSON payload of exactly `size` bytes."""
    head = b'{"aps":{"alert":"'
    tail = b'"}}'
    return head + b"x" * (size - len(head) - len(tail)) + tail


HI = b'{"aps":{"alert":"Hello"}}'
NODE_APN = b'{"messageFrom":"Caroline","aps":{"badge":3,"sound":"ping.aiff","alert":"You have a new message"}}'
CSHARP = b'{"aps":{"alert":"<msg>","badge":1,"sound":"anke.mp3"}}'
UNICODE = '{"aps":{"alert":"Grüße aus Köln 👋 日本語"}}'.encode("utf-8")
BACKGROUND = b'{"aps":{"content-available":1}}'

notification("simple-basic", "command 0 with a 32-byte token", "simple", TOKEN, HI)
notification("enhanced-basic", "command 1, identifier 1234, expiry 0", "enhanced", TOKEN, HI, 1234, 0)
notification("enhanced-identifier-zero", "identifier 0", "enhanced", TOKEN2, HI, 0, 0)
notification("enhanced-identifier-max", "identifier and expiry 0xFFFFFFFF (unsigned)", "enhanced", TOKEN, HI,
             0xFFFFFFFF, 0xFFFFFFFF)
notification("enhanced-expiry-far-future", "expiry 4102444800 (2100-01-01T00:00:00Z)", "enhanced", TOKEN, HI, 42,
             4102444800)
notification("enhanced-unicode", "UTF-8 payload with umlauts, emoji and CJK", "enhanced", TOKEN, UNICODE, 7, 0)
notification("enhanced-payload-256", "payload of exactly 256 bytes (pre-iOS 8 limit)", "enhanced", TOKEN,
             padded(256), 256, 0)
notification("enhanced-payload-2048", "payload of exactly 2048 bytes (the binary limit)", "enhanced", TOKEN,
             padded(2048), 2048, 0)
notification("enhanced-node-apn-example", "node-apn's README example payload", "enhanced", TOKEN, NODE_APN, 0,
             1389403600)
notification("enhanced-csharp-sample", "the C# sample: identifier 0, expiry now+20 s (fixed here)", "enhanced",
             TOKEN, CSHARP, 0, 1300000020)
notification("frame-all-items", "command 2 with all five items", "frame", TOKEN, HI, 7, 1700000000, 10)
notification("frame-minimal", "command 2 with token and payload only", "frame", TOKEN, HI)
notification("frame-background-priority-5", "content-available push at priority 5", "frame", TOKEN, BACKGROUND,
             99, 0, 5)
notification("frame-long-token", "a 100-byte token (the item format's maximum)", "frame", LONG_TOKEN, HI, 100)
notification("frame-payload-2048", "2048-byte payload in an item frame", "frame", TOKEN, padded(2048), 1, None, 10)
notification("frame-node-apn-example", "node-apn's example as an item frame", "frame", TOKEN, NODE_APN, 1,
             1389403600, 10)

STATUSES = [(0, "no-errors"), (1, "processing-error"), (2, "missing-device-token"), (3, "missing-topic"),
            (4, "missing-payload"), (5, "invalid-token-size"), (6, "invalid-topic-size"),
            (7, "invalid-payload-size"), (8, "invalid-token"), (10, "shutdown"), (128, "protocol-error"),
            (255, "unknown")]
for index, (status, label) in enumerate(STATUSES):
    identifier = [1234, 0, 0xFFFFFFFF][index % 3]
    write(f"error-response-{label}", f"error response, status {status}, identifier {identifier}", [
        (b"\x08", "command 8: error response"),
        (bytes([status]), f"status: {status} ({label.replace('-', ' ')})"),
        (struct.pack(">I", identifier), f"identifier: {identifier}"),
    ], dict(kind="error-response", status=status, id=identifier))


def malformed(name, title, fields, status, offset, identifier, before=0, truncated=False):
    write(name, title, fields, dict(kind="malformed", status=status, offset=offset, id=identifier,
                                    framesBefore=before, truncated=truncated))


good = enhanced_fields(1, 0, TOKEN, HI)
good_len = sum(len(d) for d, _ in good)

malformed("malformed-unknown-command", "command byte 3 does not exist",
          [(b"\x03", "command 3: unknown"), (b"\x00" * 8, "whatever follows")], 128, 0, 0)
malformed("malformed-enhanced-token-length-zero", "enhanced frame with token length 0",
          [(b"\x01", "command 1"), (struct.pack(">I", 77), "identifier: 77"), (b"\x00" * 4, "expiry: 0"),
           (b"\x00\x00", "token length: 0  <- status 2, missing device token"),
           (struct.pack(">H", len(HI)), "payload length"), (HI, "payload")], 2, 9, 77)
malformed("malformed-enhanced-token-length-31", "enhanced frame with a 31-byte token",
          [(b"\x01", "command 1"), (struct.pack(">I", 78), "identifier: 78"), (b"\x00" * 4, "expiry: 0"),
           (b"\x00\x1f", "token length: 31  <- status 5, invalid token size"), (TOKEN[:31], "token"),
           (struct.pack(">H", len(HI)), "payload length"), (HI, "payload")], 5, 9, 78)
malformed("malformed-enhanced-payload-length-zero", "enhanced frame with payload length 0",
          [(b"\x01", "command 1"), (struct.pack(">I", 79), "identifier: 79"), (b"\x00" * 4, "expiry: 0"),
           (b"\x00\x20", "token length: 32"), (TOKEN, "token"),
           (b"\x00\x00", "payload length: 0  <- status 4, missing payload")], 4, 43, 79)
malformed("malformed-enhanced-payload-too-large", "payload length 2049, over the 2048-byte limit",
          [(b"\x01", "command 1"), (struct.pack(">I", 80), "identifier: 80"), (b"\x00" * 4, "expiry: 0"),
           (b"\x00\x20", "token length: 32"), (TOKEN, "token"),
           (b"\x08\x01", "payload length: 2049  <- status 7, judged before the payload arrives")], 7, 43, 80)
malformed("malformed-simple-token-length-zero", "simple frame with token length 0",
          [(b"\x00", "command 0"), (b"\x00\x00", "token length: 0  <- status 2"),
           (struct.pack(">H", len(HI)), "payload length"), (HI, "payload")], 2, 1, 0)
malformed("malformed-frame-missing-token", "item frame without item 1",
          [(b"\x02", "command 2"), (struct.pack(">I", 3 + len(HI) + 7), f"frame length: {3 + len(HI) + 7}")]
          + item(2, HI, "payload") + item(3, struct.pack(">I", 81), "identifier 81"), 2, 1, 81)
malformed("malformed-frame-missing-payload", "item frame without item 2",
          [(b"\x02", "command 2"), (struct.pack(">I", 35 + 7), "frame length: 42")]
          + item(1, TOKEN, "device token") + item(3, struct.pack(">I", 82), "identifier 82"), 4, 1, 82)
malformed("malformed-frame-duplicate-item", "item frame with the token item twice",
          [(b"\x02", "command 2"), (struct.pack(">I", 35 + 7 + 35), "frame length: 77")]
          + item(1, TOKEN, "device token") + item(3, struct.pack(">I", 83), "identifier 83")
          + item(1, TOKEN, "device token again  <- status 128"), 128, 5 + 42, 83)
malformed("malformed-frame-unknown-item", "item frame with item id 6",
          [(b"\x02", "command 2"), (struct.pack(">I", 35 + 3 + len(HI) + 7 + 4), "frame length")]
          + item(1, TOKEN, "device token") + item(2, HI, "payload") + item(3, struct.pack(">I", 84), "identifier 84")
          + [(b"\x06\x00\x01", "item 6, length 1  <- status 128, unknown item"), (b"\x00", "data")],
          128, 5 + 35 + 3 + len(HI) + 7, 84)
malformed("malformed-frame-item-overrun", "an item whose length runs past the frame",
          [(b"\x02", "command 2"), (struct.pack(">I", 10), "frame length: 10"),
           (b"\x01\x00\x20", "item 1, length 32  <- runs past the 10-byte frame: status 128"), (b"\x00" * 7, "")],
          128, 5, 0)
malformed("malformed-frame-priority-length", "priority item of 2 bytes",
          [(b"\x02", "command 2"), (struct.pack(">I", 35 + 3 + len(HI) + 7 + 5), "frame length")]
          + item(1, TOKEN, "device token") + item(2, HI, "payload") + item(3, struct.pack(">I", 85), "identifier 85")
          + [(b"\x05\x00\x02", "item 5, length 2  <- status 128, priority is 1 byte"), (b"\x0a\x0a", "")],
          128, 5 + 35 + 3 + len(HI) + 7, 85)
malformed("malformed-frame-hostile-length", "frame length 0xFFFFFFFF, then a 5000-byte payload item header",
          [(b"\x02", "command 2"), (b"\xff\xff\xff\xff", "frame length: 4294967295 (no valid frame is this long)"),
           (b"\x01\x00\x20", "item 1, length 32"), (TOKEN, "device token"),
           (b"\x02\x13\x88", "item 2, length 5000  <- status 7, judged at once, nothing buffered")],
          7, 5 + 35, 0)
malformed("malformed-after-good-frames", "two good frames, then command 9",
          good + enhanced_fields(2, 0, TOKEN, HI) + [(b"\x09", "command 9: unknown  <- status 128")],
          128, 2 * good_len, 0, before=2)
malformed("truncated-enhanced", "a good frame, then 30 bytes of the next",
          good + [(b"\x01", "command 1"), (struct.pack(">I", 2), "identifier: 2"), (b"\x00" * 4, "expiry"),
                  (b"\x00\x20", "token length: 32"), (TOKEN[:20], "20 of 32 token bytes: stream ends here")],
          128, good_len + 31, 0, before=1, truncated=True)
malformed("truncated-error-response", "3 of an error response's 6 bytes",
          [(b"\x08", "command 8"), (b"\x08", "status 8"), (b"\x00", "1 of 4 identifier bytes: stream ends here")],
          128, 3, 0, truncated=True)

with open(os.path.join(HERE, "manifest.jsonl"), "w") as out:
    for entry in manifest:
        out.write(json.dumps(entry, ensure_ascii=False) + "\n")
print(f"wrote {len(manifest)} fixtures to {HERE}")
