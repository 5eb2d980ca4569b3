// See include/CFileGuard.h. Written in C because it is a signal handler: it touches only
// lock-free atomics and makes one system call.
#include "CFileGuard.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { slot_count = 16 };

static _Atomic(uintptr_t) starts[slot_count];
static _Atomic(uintptr_t) ends[slot_count];
static atomic_bool hits[slot_count];
static atomic_int state;  // 0: not installed, 1: installing, 2: installed, 3: failed
static uintptr_t page_mask;
static struct sigaction previous;

static void on_sigbus(int signo, siginfo_t *info, void *context) {
    (void)signo;
    (void)context;
    uintptr_t address = (uintptr_t)info->si_addr;
    for (int slot = 0; slot < slot_count; slot++) {
        uintptr_t start = atomic_load(&starts[slot]);
        uintptr_t end = atomic_load(&ends[slot]);
        if (start == 0 || address < start || address >= end) continue;
        void *page = (void *)(address & ~page_mask);
        if (mmap(page, page_mask + 1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
            break;
        atomic_store(&hits[slot], true);
        return;  // the access is made again, and reads zeros
    }
    // Not a guarded range: what was there before. Returning makes the access fault again under
    // it (a SIGBUS from a fault cannot be ignored: the kernel then applies the default).
    sigaction(SIGBUS, &previous, NULL);
}

static bool install(void) {
    int expected = 0;
    if (atomic_compare_exchange_strong(&state, &expected, 1)) {
        page_mask = (uintptr_t)sysconf(_SC_PAGESIZE) - 1;
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = on_sigbus;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&action.sa_mask);
        atomic_store(&state, sigaction(SIGBUS, &action, &previous) == 0 ? 2 : 3);
    }
    while (atomic_load(&state) == 1) {
    }
    return atomic_load(&state) == 2;
}

int lp_file_guard_register(const void *start, size_t length) {
    if (start == NULL || length == 0 || !install()) return -1;
    for (int slot = 0; slot < slot_count; slot++) {
        uintptr_t free_slot = 0;
        if (atomic_compare_exchange_strong(&starts[slot], &free_slot, (uintptr_t)start)) {
            atomic_store(&hits[slot], false);
            atomic_store(&ends[slot], (uintptr_t)start + length);
            return slot;
        }
    }
    return -1;
}

bool lp_file_guard_hit(int slot) {
    return slot >= 0 && slot < slot_count && atomic_load(&hits[slot]);
}

bool lp_file_guard_release(int slot) {
    if (slot < 0 || slot >= slot_count) return false;
    bool hit = atomic_load(&hits[slot]);
    atomic_store(&ends[slot], 0);
    atomic_store(&starts[slot], 0);
    return hit;
}

#include <sys/eventfd.h>

int lp_wake_descriptor(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }
