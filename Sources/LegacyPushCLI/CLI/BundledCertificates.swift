internal import APNsRuntime
import CommandLineKit
import LegacyAPNs
import Synchronization

/// The test certificates (a throwaway CA, a gateway certificate for 127.0.0.1/localhost, provider
/// certificates) that `demo` and `serve` use when no certificates are given, so both work without
/// an Apple account, on a fresh checkout or with the binary copied anywhere.
///
/// Looked up, first match wins:
/// 1. `$LEGACY_PUSH_FIXTURES`: a folder holding `ca.pem`, `chain.pem`, `server.pem`,
///    `server.key`, `universal-legacy.p12` (an error when it is set but lacks them);
/// 2. next to the executable: `Fixtures/certs` in its folder or one of the five above it (so
///    `<checkout>/.build/debug/legacy-push` finds `<checkout>/Fixtures/certs`);
/// 3. the current checkout: `Fixtures/certs` in the current directory or one above it;
/// 4. else a throwaway set is generated with OpenSSL into a new private temporary folder
///    (``ThrowawayCertificates``), with the same file names and passphrase.
enum BundledCertificates {
    static let passphrase = "secret"
    /// The environment variable that names the folder.
    static let environmentVariable = "LEGACY_PUSH_FIXTURES"
    /// What `--help` says about it.
    static let environmentHelp =
        "A folder of test certificates for demo and serve (ca.pem, chain.pem, server.pem, server.key, "
        + "universal-legacy.p12; passphrase 'secret'). Default: Fixtures/certs next to the binary or in the "
        + "current checkout, else a throwaway set generated into a temporary folder."
    /// The files a folder must have.
    static let requiredFiles = ["ca.pem", "chain.pem", "server.pem", "server.key", "universal-legacy.p12"]

    /// Where the certificates were found.
    struct Location: Hashable, Sendable {
        enum Source: Hashable, Sendable {
            case environment, nextToExecutable, currentCheckout, generated
        }

        var path: String
        var source: Source
    }

    /// A folder generated earlier by this process (generated once, reused by later calls).
    private static let generated = Mutex<String?>(nil)

    /// The folder, found or generated.
    ///
    /// - Throws: ``CLIError`` when `$LEGACY_PUSH_FIXTURES` names a folder without the files, or
    ///   when nothing was found and generating failed.
    static func locate(
        environment: String? = Host.environment(environmentVariable),
        executable: String? = executablePath(), currentDirectory: String? = currentDirectoryPath(),
        for command: String
    ) throws -> Location {
        if let environment, !environment.isEmpty {
            guard hasFiles(environment) else {
                throw CLIError.usage(
                    "\(environmentVariable)='\(environment)' is not a folder of test certificates (it needs "
                        + "\(requiredFiles.joined(separator: ", ")))")
            }
            return Location(path: environment, source: .environment)
        }
        if let found = executable.flatMap({ search(from: directory(of: $0), levels: 6) }) {
            return Location(path: found, source: .nextToExecutable)
        }
        if let found = currentDirectory.flatMap({ search(from: $0, levels: 6) }) {
            return Location(path: found, source: .currentCheckout)
        }
        return Location(path: try generate(for: command), source: .generated)
    }

    /// The folder's path (for callers that only need the path).
    static func require(for command: String) throws -> String {
        try locate(for: command).path
    }

    /// A line that says where the certificates came from, for the command's log.
    static func describe(_ location: Location) -> String {
        switch location.source {
        case .generated:
            "generated throwaway test certificates in \(location.path) (no Fixtures/certs found; "
                + "\(environmentVariable) names another folder)"
        case .environment: "using the test certificates in \(location.path) (from \(environmentVariable))"
        case .nextToExecutable, .currentCheckout: "using the test certificates in \(location.path)"
        }
    }

    /// Removes a folder this process generated (the demo cleans up after itself).
    static func removeGenerated() {
        guard
            let path = generated.withLock({ path -> String? in
                defer { path = nil }
                return path
            })
        else { return }
        for file in requiredFiles + ["universal-modern.p12", "passphrase.txt"] { FileSystem.remove(path + "/" + file) }
        FileSystem.removeDirectory(path)
    }

    /// `Fixtures/certs` in `start` or up to `levels - 1` folders above it.
    static func search(from start: String, levels: Int) -> String? {
        var parts = start.split(separator: "/", omittingEmptySubsequences: false)
        for _ in 0..<levels where !parts.isEmpty {
            let base = parts.joined(separator: "/")
            let candidate = (base.isEmpty ? "" : base) + "/Fixtures/certs"
            if hasFiles(candidate) { return candidate }
            parts.removeLast()
        }
        return nil
    }

    static func hasFiles(_ folder: String) -> Bool {
        requiredFiles.allSatisfy { FileSystem.isReadable(folder + "/" + $0) }
    }

    /// Generates a throwaway set into a new private temporary folder (once per process).
    static func generate(for command: String) throws -> String {
        try generated.withLock { existing in
            if let existing { return existing }
            let set: ThrowawayCertificates
            do {
                set = try ThrowawayCertificates.generate(now: Host.unixTime())
            } catch let error as LegacyAPNsError {
                throw CLIError.usage(
                    "\(command) found no test certificates (\(environmentVariable), Fixtures/certs next to the binary "
                        + "or in the current directory) and could not generate throwaway ones: \(error.reason)")
            }
            let folder = try Files.makeTemporaryFolder(prefix: "legacy-push-certs-", for: "test certificates")
            let ca = Array(set.certificateAuthority.pemRepresentation.utf8)
            let files: [(String, [UInt8], Bool)] = [
                ("ca.pem", ca, false), ("chain.pem", ca, false),
                ("server.pem", Array(set.server.certificate.pemRepresentation.utf8), false),
                ("server.key", Array(set.server.privateKey.pemRepresentation.utf8), true),
                (
                    "universal-legacy.p12",
                    try set.client.pkcs12Representation(passphrase: passphrase, encryption: .legacy), true
                ),
                ("universal-modern.p12", try set.client.pkcs12Representation(passphrase: passphrase), true),
                ("passphrase.txt", Array((passphrase + "\n").utf8), false),
            ]
            for (name, bytes, secret) in files {
                try OutputFile.write(bytes, to: folder + "/" + name, holdsPrivateKey: secret, overwrite: false)
            }
            existing = folder
            return folder
        }
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return String(path[..<slash])
    }

    static func executablePath() -> String? { Host.executablePath() }

    static func currentDirectoryPath() -> String? { Host.currentDirectory() }
}
