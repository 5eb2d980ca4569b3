internal import APNsRuntime
import LegacyAPNs

#if canImport(Glibc)
    import Glibc
#endif

/// Talking to the controlling terminal directly (not stdin/stdout), for passphrase prompts.
enum Terminal {
    /// Longest secret read; anything longer is cut.
    static let maximumLength = 4096

    /// Shows `prompt` on `/dev/tty` and reads one line with echo off. Returns nil when there is no
    /// terminal or reading fails. The secret never reaches stdout, stderr or any log.
    static func readSecret(prompt: String) -> String? {
        let descriptor = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        writeAll(Array(prompt.utf8), to: descriptor)

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
        if !hasTermios { writeAll([0x0A], to: descriptor) }
        let secret = String(decoding: line, as: UTF8.self)
        for index in line.indices { line[index] = 0 }
        return secret
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        FileDescriptor.writeAll(bytes, to: descriptor)
    }
}
