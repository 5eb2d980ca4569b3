// Thin bridge from SQLite 3 (Debian's libsqlite3-dev) to Swift, for the bridge's durable feedback
// store. SQLite's API is plain functions Swift imports directly; what it cannot see is the
// destructor macro `SQLITE_TRANSIENT` (a casted -1), re-exported here as a function. No state.
#ifndef LEGACYAPNS_CSQLITE_SHIM_H
#define LEGACYAPNS_CSQLITE_SHIM_H

#include <sqlite3.h>

/// `SQLITE_TRANSIENT`: SQLite copies bound bytes before the call returns.
static inline sqlite3_destructor_type CSQLite_transient(void) { return SQLITE_TRANSIENT; }

#endif
