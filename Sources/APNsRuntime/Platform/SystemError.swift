#if canImport(Glibc)
    import Glibc
#endif

/// A failed system call's `errno`, for the modules above the runtime: they word the error for
/// people ("cannot read 'x.p12': No such file or directory") without reaching for the C library.
package struct SystemError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `errno` value.
    package var code: Int32

    package init(code: Int32) { self.code = code }

    /// The current thread's `errno`.
    package static var last: SystemError { SystemError(code: errno) }

    /// `EIO`, for a write that wrote nothing.
    package static let inputOutput = SystemError(code: EIO)

    /// `strerror`: "No such file or directory".
    package var description: String { errnoText(code) }

    /// Something is already there (`EEXIST`).
    package var isAlreadyExisting: Bool { code == EEXIST }
}
