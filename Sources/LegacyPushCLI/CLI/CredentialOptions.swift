internal import APNsRuntime
import CommandLineKit
import LegacyAPNs

/// The credential options shared by every command that reads a certificate: `--cert`, `--key`,
/// `--passphrase-env`, `--passphrase-file`, and how they turn into a passphrase and an identity.
enum CredentialOptions {
    /// `--cert`.
    static let certificate = Option<String>.text(
        "cert", "path",
        help: "The certificate: a .p12/.pfx file, or PEM holding the certificate (and possibly the key).")
    /// `--key`.
    static let key = Option<String>.text("key", "path", help: "The PEM private key, when it is not inside --cert.")
    /// `--passphrase-env`.
    static let passphraseEnvironment = Option<String>.text(
        "passphrase-env", "name",
        help: "Read the .p12 or key passphrase from this environment variable. With neither passphrase option: "
            + "a prompt when stdin is a terminal, else the empty passphrase (an encrypted file then fails with "
            + "'no passphrase was given').")
    /// `--passphrase-file`.
    static let passphraseFile = Option<String>.text(
        "passphrase-file", "path", help: "Read the passphrase from this file (one trailing newline is ignored).")

    /// `--cert`, `--key` and the passphrase pair (for `send`, `feedback`, `serve`).
    static let all: [OptionSpec] = [certificate.spec, key.spec] + passphraseOnly

    /// Only `--passphrase-env` and `--passphrase-file` (for `convert`, `inspect`).
    static let passphraseOnly: [OptionSpec] = [passphraseEnvironment.spec, passphraseFile.spec]

    /// The passphrase the options name, or nil when neither option is given.
    ///
    /// - Throws: ``CLIError`` when both are given, the variable is not set, or the file is unreadable.
    static func explicitPassphrase(_ arguments: ParsedArguments) throws -> String? {
        try passphrase(
            environment: arguments.value(passphraseEnvironment), file: arguments.value(passphraseFile))
    }

    /// The passphrase for the credentials at `path`: from `--passphrase-env` or
    /// `--passphrase-file`; with neither, a no-echo prompt on the terminal when stdin is one, else
    /// nil (the empty passphrase).
    static func passphrase(_ arguments: ParsedArguments, console: Console, for path: String) throws -> String? {
        if let explicit = try explicitPassphrase(arguments) { return explicit }
        guard console.stdinIsTerminal else { return nil }
        return Terminal.readSecret(prompt: "Passphrase for \(path): ")
    }

    /// Reads a passphrase from an environment variable or a file (the `--passphrase-*` and
    /// `--out-passphrase-*` pairs share this); nil when neither is given.
    static func passphrase(environment name: String?, file path: String?, option: String = "passphrase") throws
        -> String?
    {
        switch (name, path) {
        case (nil, nil):
            return nil
        case (.some, .some):
            throw CLIError.usage("give either --\(option)-env or --\(option)-file, not both")
        case (let name?, nil):
            guard !name.isEmpty, let value = Host.environment(name) else {
                throw CLIError.usage("environment variable '\(name)' (from --\(option)-env) is not set")
            }
            return value
        case (nil, let path?):
            var bytes = try Files.read(path, limit: 64 * 1024)
            if bytes.last == 0x0A { bytes.removeLast() }
            if bytes.last == 0x0D { bytes.removeLast() }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// Loads `--cert` (and `--key`) as the identity for a connection.
    ///
    /// - Throws: ``CLIError`` for a missing option or unreadable file, ``LegacyAPNsError`` (naming
    ///   the file) for a wrong passphrase, damaged file, missing key or mismatching key.
    static func loadIdentity(_ arguments: ParsedArguments, console: Console) throws -> ClientIdentity {
        let certPath = try arguments.required(certificate)
        let keyPath = try arguments.value(key)
        let credentials = try loadCredentials(certPath, keyPath: keyPath, arguments: arguments, console: console)
        return try identity(credentials, certPath: certPath, keyPath: keyPath)
    }

    /// Turns loaded credentials into an identity, naming the files in the errors.
    static func identity(_ credentials: Credentials, certPath: String, keyPath: String?) throws -> ClientIdentity {
        do {
            return try credentials.identity()
        } catch let error as LegacyAPNsError where error.code == .missingCredentials {
            throw LegacyAPNsError(.missingCredentials, "'\(certPath)' holds no private key: give it with --key PATH")
        } catch let error as LegacyAPNsError where error.code == .keyMismatch {
            throw LegacyAPNsError(.keyMismatch, mismatchReason(certPath: certPath, keyPath: keyPath))
        }
    }

    /// "private key 'k.pem' does not match the certificate 'c.pem'".
    static func mismatchReason(certPath: String, keyPath: String?) -> String {
        let key = keyPath.map { "private key '\($0)'" } ?? "the private key in '\(certPath)'"
        return "\(key) does not match the certificate in '\(certPath)'"
    }

    /// Reads credentials from files (format by content), with the passphrase from the options.
    ///
    /// Without a passphrase option the files are first tried with the empty passphrase, and only
    /// when that is wrong and stdin is a terminal is the user prompted: unencrypted files never
    /// cause a prompt. When no prompt is possible (stdin is not a terminal: CI, cron, a pipe), an
    /// encrypted file is reported as ``LegacyAPNsError/Code-swift.struct/missingPassphrase``
    /// naming the two options, not as a wrong passphrase: none was given.
    static func loadCredentials(
        _ path: String, keyPath: String?, arguments: ParsedArguments, console: Console
    ) throws -> Credentials {
        let bytes = try Files.read(path)
        let keyBytes = try keyPath.map { try Files.read($0) }
        let explicit = try explicitPassphrase(arguments)

        // The file an attempt was opening when it failed (the certificate file, or the separate key).
        var opening = path
        func attempt(_ passphrase: String?) throws -> Credentials {
            opening = path
            let credentials = try naming(path) { try Credentials(bytes, passphrase: passphrase) }
            guard let keyPath, let keyBytes else { return credentials }
            opening = keyPath
            let key = try naming(keyPath) { try PrivateKey(pemRepresentation: keyBytes, passphrase: passphrase) }
            return credentials.replacingPrivateKey(key)
        }

        if explicit != nil { return try attempt(explicit) }
        do {
            return try attempt(nil)
        } catch let error as LegacyAPNsError where error.code == .wrongPassphrase {
            // The file that needs one: the certificate file, or the separate key.
            let encrypted = opening
            guard console.stdinIsTerminal, let typed = Terminal.readSecret(prompt: "Passphrase for \(path): ") else {
                throw missingPassphrase(encrypted, terminal: console.stdinIsTerminal)
            }
            return try attempt(typed)
        }
    }

    /// "'push.p12' is encrypted and no passphrase was given: ...".
    static func missingPassphrase(_ path: String, terminal: Bool) -> LegacyAPNsError {
        let why =
            terminal
            ? "the terminal could not be opened for a prompt" : "stdin is not a terminal, so there is no prompt"
        return LegacyAPNsError(
            .missingPassphrase,
            "'\(path)' is encrypted and no passphrase was given (\(why)): "
                + "use --passphrase-env NAME or --passphrase-file PATH")
    }

    /// Runs `body`, prefixing the reason of a thrown ``LegacyAPNsError`` with the file's path.
    static func naming<Result>(_ path: String, _ body: () throws -> Result) throws -> Result {
        do {
            return try body()
        } catch let error as LegacyAPNsError where error.code != .fileError {  // a file error names its file
            throw LegacyAPNsError(error.code, "\(path): \(error.reason)")
        }
    }
}
