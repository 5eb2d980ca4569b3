// The device token of a JSON Lines input decoded sixteen digits at a time (SSE2, which every
// x86-64 processor has; elsewhere a portable loop). APNsCore's DeviceToken(plainHex64:) calls it.
#ifndef CHEXDECODE_H
#define CHEXDECODE_H

#include <stdbool.h>
#include <stdint.h>

/// Decodes exactly 64 hex digits (either case) at `text` into 32 bytes at `out` (the first digit
/// is the high nibble of the first byte). Returns false, with `out` unspecified, when any of the
/// 64 bytes is not a hex digit.
bool lp_hex_decode64(const void *text, void *out);

#endif
