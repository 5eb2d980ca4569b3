#if canImport(Glibc)
    import Glibc
#endif

/// Talking to the controlling terminal directly (not stdin/stdout), for passphrase prompts.
package enum Terminal {
    /// Longest secret read; anything longer is cut.
    package static let maximumLength = 4096

    /// Shows `prompt` on `/dev/tty` and reads one line with echo off. Returns nil when there is no
    /// terminal or reading fails. The secret never reaches stdout, stderr or any log.
    package static func readSecret(prompt: String) -> String? {
        guard let descriptor = try? FileDescriptor.open("/dev/tty", .terminal) else { return nil }
        defer { FileDescriptor.close(descriptor) }
        FileDescriptor.writeAll(Array(prompt.utf8), to: descriptor)

        var saved = termios()
        let hasTermios = tcgetattr(descriptor, &saved) == 0
        if hasTermios {
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO)
            silent.c_lflag |= tcflag_t(ECHONL)
            _ = tcsetattr(descriptor, TCSAFLUSH, &silent)
        }
        defer {
            if hasTermios { _ = tcsetattr(descriptor, TCSAFLUSH, &saved) }
        }

        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let count = read(descriptor, &byte, 1)
            if count < 0, errno == EINTR { continue }
            if count <= 0 {
                if line.isEmpty { return nil }
                break
            }
            if byte == 0x0A { break }
            if line.count < maximumLength { line.append(byte) }
        }
        if line.last == 0x0D { line.removeLast() }
        if !hasTermios { FileDescriptor.writeAll([0x0A], to: descriptor) }
        let secret = String(decoding: line, as: UTF8.self)
        for index in line.indices { line[index] = 0 }
        return secret
    }
}
