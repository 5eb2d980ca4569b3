// Thin, header-only bridge from nghttp2 (1.52, the `ssize_t` API) to Swift.
//
// nghttp2's API is plain functions, structs and enums that Swift imports directly; none of it is
// variadic. What Swift cannot see are the function-like and casted macros, so this header
// re-exports exactly the ones LegacyAPNs uses, each named `CNGHTTP2_<original name>`. Nothing
// here holds state.
#ifndef LEGACYAPNS_CNGHTTP2_SHIM_H
#define LEGACYAPNS_CNGHTTP2_SHIM_H

#include <nghttp2/nghttp2.h>

/// `NGHTTP2_MAX_WINDOW_SIZE` is a casted expression Swift does not import.
static const int32_t CNGHTTP2_NGHTTP2_MAX_WINDOW_SIZE = NGHTTP2_MAX_WINDOW_SIZE;

#endif
