internal import APNsRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// The test certificates in the repository's `Fixtures/certs` (a throwaway CA, a gateway
/// certificate for 127.0.0.1/localhost, provider certificates), which `demo` and `serve` use when
/// no certificates are given, so both work on a fresh checkout without an Apple account.
///
/// They are looked up in `./Fixtures/certs`, then next to the executable's package
/// (`<package>/.build/<config>/legacy-push`), then in `$LEGACY_PUSH_FIXTURES`.
enum BundledCertificates {
    static let passphrase = "secret"

    /// The folder, or nil when none of the places has it.
    static var directory: String? {
        var candidates: [String] = []
        if let variable = getenv("LEGACY_PUSH_FIXTURES") { candidates.append(String(cString: variable)) }
        candidates.append("Fixtures/certs")
        if let executable = executablePath() {
            var parts = executable.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            for _ in 0..<5 where !parts.isEmpty {
                candidates.append(parts.joined(separator: "/") + "/Fixtures/certs")
                parts = parts.dropLast()
            }
        }
        return candidates.first { access($0 + "/ca.pem", R_OK) == 0 && access($0 + "/server.pem", R_OK) == 0 }
    }

    /// The folder, or a usage error explaining how to get one.
    static func require(for command: String) throws -> String {
        guard let directory else {
            throw CLIError.usage(
                "\(command) needs certificates: give --cert, --key and --ca-file, or run it from a LegacyAPNs "
                    + "checkout (which has Fixtures/certs)")
        }
        return directory
    }

    private static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
