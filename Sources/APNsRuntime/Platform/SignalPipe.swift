import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// SIGINT and SIGTERM (and SIGHUP once asked for), turned into calls on a thread of their own: the signal handler only
/// writes the signal's number to a pipe (async-signal-safe), and a dedicated thread reads it and
/// hands it to Swift code. That thread unblocks both signals for itself, so a signal is delivered
/// even when the process inherited them blocked (a parent's worker thread spawned it) and every
/// other thread keeps them blocked. The command line's `SignalRelay` decides what a signal does.
package enum SignalPipe {
    /// Installs the handler for SIGINT and SIGTERM and starts the thread that calls `deliver`
    /// with each signal's number. Call once. Without a pipe (no descriptors left) the signals
    /// keep their default action: Ctrl-C still ends the process, only not cleanly.
    package static func start(_ deliver: @escaping @Sendable (Int32) -> Void) {
        // A full pipe (a flood of signals) drops the extra bytes; one is all it takes.
        guard let (readEnd, writeEnd) = FileDescriptor.makePipe(nonBlockingRead: false) else { return }
        signalPipeWriteEnd.store(writeEnd, ordering: .releasing)
        OSThread.start(name: "apns-signals") {
            var watched = sigset_t()
            sigemptyset(&watched)
            sigaddset(&watched, SIGINT)
            sigaddset(&watched, SIGTERM)
            sigaddset(&watched, SIGHUP)
            pthread_sigmask(SIG_UNBLOCK, &watched, nil)
            var number: UInt8 = 0
            while true {
                let count = read(readEnd, &number, 1)
                if count == 1 {
                    deliver(Int32(number))
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }
        for number in [SIGINT, SIGTERM] { relay(number) }
    }

    /// SIGHUP's number (the reload signal of long-running servers).
    package static let hangup = SIGHUP

    /// Relays SIGHUP too (after ``start(_:)``), which otherwise keeps its default action (the
    /// process ends): for a command that reloads on it.
    package static func relayHangups() {
        guard signalPipeWriteEnd.load(ordering: .acquiring) >= 0 else { return }
        relay(SIGHUP)
    }

    private static func relay(_ number: Int32) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = relaySignal
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        sigaction(number, &action, nil)
    }

    /// Ends the process as signal `number`'s default action does (on the signals' thread, which
    /// has it unblocked), or with exit status 128 + `number` if that returns.
    package static func endProcess(as number: Int32) -> Never {
        signal(number, SIG_DFL)
        raise(number)
        _exit(128 + number)
    }
}

/// Where the signal handler writes (set once, before the handler is installed).
private let signalPipeWriteEnd = Atomic<Int32>(-1)

/// The signal handler: async-signal-safe (one `write`, errno preserved).
private func relaySignal(_ number: Int32) {
    let descriptor = signalPipeWriteEnd.load(ordering: .acquiring)
    guard descriptor >= 0 else { return }
    let saved = errno
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(descriptor, &byte, 1)
    errno = saved
}
