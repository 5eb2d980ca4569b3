#if canImport(Glibc)
    import Glibc
#endif

/// The machine and the process: what the modules above the runtime ask the operating system
/// about themselves (the library never reads the environment; the command line does, here).
package enum Host {
    /// Processors online (at least 1).
    package static var processorCount: Int { Swift.max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// The size of a memory page.
    package static var pageSize: Int { Int(sysconf(Int32(_SC_PAGESIZE))) }

    /// The wall clock: UNIX time in whole seconds (`time(2)`).
    package static func unixTime() -> Int64 { Int64(time(nil)) }

    /// The wall clock in milliseconds since 1970 (`CLOCK_REALTIME`).
    package static func unixMilliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }

    /// The environment variable `name`, or nil when it is not set.
    package static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The machine's host name (`gethostname`), empty when it cannot be told.
    package static var name: String {
        var host = [CChar](repeating: 0, count: 256)
        guard gethostname(&host, host.count - 1) == 0 else { return "" }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// This process's id.
    package static var processID: Int32 { getpid() }

    /// The running executable's path (`/proc/self/exe`), or nil when it cannot be told.
    package static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The current directory, or nil when it cannot be told.
    package static func currentDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Ends the process with `status` at once (`_exit`): no atexit handlers, no buffers flushed.
    package static func exit(_ status: Int32) -> Never { _exit(status) }
}
