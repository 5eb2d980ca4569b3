// Mapped input that survives being truncated meanwhile (ARCHITECTURE.md, "Input").
//
// A read-only file mapping whose file another process truncates kills the reader with SIGBUS
// when it touches a page past the new end. A range registered here is guarded instead: the
// SIGBUS handler maps a page of zeros over the faulting page, notes the hit, and the access
// carries on; the reader asks whether its range was hit and reports a truncated file. A SIGBUS
// anywhere else gets the disposition that was there before (the default: the process dies).
#ifndef CFILEGUARD_H
#define CFILEGUARD_H

#include <stdbool.h>
#include <stddef.h>

/// Guards [start, start + length) (a mapping of this process). Returns a slot for the other
/// calls, or -1 when every slot is taken or the handler cannot be installed (read the file
/// another way then).
int lp_file_guard_register(const void *start, size_t length);

/// Whether a page of the slot's range was replaced by zeros since it was registered.
bool lp_file_guard_hit(int slot);

/// Ends the guard (before the range is unmapped). Returns lp_file_guard_hit.
bool lp_file_guard_release(int slot);

/// The one other OS call the runtime needs that Swift's Glibc module does not import
/// (<sys/eventfd.h>): a non-blocking, close-on-exec eventfd for WakeSignal, or -1.
int lp_wake_descriptor(void);

#endif
