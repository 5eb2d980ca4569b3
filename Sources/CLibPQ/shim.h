// Thin bridge from PostgreSQL's libpq (Debian's libpq-dev) to Swift, for the bridge's shared
// store (a fleet of bridges on one database). libpq's API is plain functions Swift imports
// directly; nothing here needs a shim beyond the header. No state.
#ifndef LEGACYAPNS_CLIBPQ_SHIM_H
#define LEGACYAPNS_CLIBPQ_SHIM_H

#include <libpq-fe.h>

#endif
