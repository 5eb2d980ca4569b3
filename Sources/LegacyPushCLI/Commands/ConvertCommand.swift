internal import APNsRuntime
import CommandLineKit
import LegacyAPNs

/// `legacy-push convert`: PKCS#12 to PEM and back, DER `.cer` to PEM, legacy or modern encryption.
enum ConvertCommand {
    enum Options {
        static let out = Option<String>.text(
            "out", "path", help: "Where to write the result; - writes to stdout (needs --to).", required: true)
        static let to = Option<Target>.choice(
            "to", help: "The output format; by default taken from --out's extension (.pem, .p12, .pfx).",
            ["pem": .pem, "p12": .p12])
        static let key = Option<String>.text(
            "key", "path", help: "A PEM private key to include, when the input does not hold it.")
        static let legacy = Flag(
            "legacy", help: "Write the .p12 with RC2-40/3DES encryption and a SHA-1 MAC, for old tools.")
        static let name = Option<String>.text(
            "name", "text", help: "The friendly name stored in the .p12 (what Keychain Access shows).")
        static let outPassphraseEnvironment = Option<String>.text(
            "out-passphrase-env", "name",
            help: "Protect the .p12 with the passphrase in this environment variable. With neither "
                + "--out-passphrase option: a prompt when stdin is a terminal, else the empty passphrase.")
        static let outPassphraseFile = Option<String>.text(
            "out-passphrase-file", "path", help: "Protect the .p12 with the passphrase in this file.")
        static let force = Flag("force", help: "Overwrite --out if it exists.")
    }

    static var spec: CommandSpec {
        CommandSpec(
            name: "convert",
            abstract: "Convert push certificates between .p12, PEM and .cer.",
            discussion: """
                Reads a .p12/.pfx (modern AES, 3DES or Keychain-era RC2-40 encryption), PEM (certificates \
                and possibly a key) or a DER .cer; the format is detected from the content. \
                --to pem writes the certificate, its chain, then the unencrypted private key, as \
                'openssl pkcs12 -nodes' does. --to p12 writes a .p12 with modern encryption \
                (AES-256-CBC, SHA-256 MAC), or with --legacy the RC2-40/3DES/SHA-1 scheme old tools need.

                An existing file is never overwritten without --force. Files holding a private key \
                are created with mode 0600; the output appears only once completely written.
                """,
            arguments: [ArgumentSpec(name: "input", help: "The .p12/.pfx, PEM or .cer file to read.")],
            options: [
                Options.out.spec, Options.to.spec, Options.key.spec, Options.legacy.spec, Options.name.spec,
                Options.outPassphraseEnvironment.spec, Options.outPassphraseFile.spec, Options.force.spec,
            ] + CredentialOptions.passphraseOnly,
            run: { arguments, console in try run(arguments, console: console) },
            examples: [
                "legacy-push convert push.p12 --out push.pem --passphrase-env P12_PASSPHRASE",
                "legacy-push convert push.pem --key push.key --out push.p12 --out-passphrase-file pass.txt",
                "legacy-push convert push.pem --out old-tools.p12 --legacy --out-passphrase-env OUT_PASS",
                "legacy-push convert aps.cer --out aps.pem",
            ])
    }

    enum Target: String, Sendable {
        case pem
        case p12
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitStatus {
        let input = arguments.positionals[0]
        let out = try arguments.required(Options.out)
        let target = try target(arguments, out: out)
        if target == .pem,
            let option = arguments.given(["legacy", "name", "out-passphrase-env", "out-passphrase-file"]).first
        {
            throw CLIError.usage("--\(option) only applies to --to p12")
        }
        let force = arguments.isSet(Options.force)
        let toStdout = out == "-"
        if !toStdout { try OutputFile.checkWritable(out, overwrite: force) }

        let keyPath = try arguments.value(Options.key)
        let credentials = try CredentialOptions.loadCredentials(
            input, keyPath: keyPath, arguments: arguments, console: console)

        switch target {
        case .pem:
            let text: String
            if credentials.privateKey != nil {
                text = try CredentialOptions.identity(credentials, certPath: input, keyPath: keyPath).pemRepresentation
            } else {
                text = ([credentials.certificate] + credentials.chain).map(\.pemRepresentation).joined()
            }
            let holdsKey = credentials.privateKey != nil
            if toStdout {
                console.write(Array(text.utf8))
                return .success
            }
            try OutputFile.write(Array(text.utf8), to: out, holdsPrivateKey: holdsKey, overwrite: force)
            console.print("wrote \(out): \(contents(credentials, key: holdsKey ? "unencrypted private key" : nil))")
        case .p12:
            guard credentials.privateKey != nil else {
                throw CLIError.usage("'\(input)' holds no private key, and a .p12 needs one: give it with --key PATH")
            }
            let identity = try CredentialOptions.identity(credentials, certPath: input, keyPath: keyPath)
            let passphrase = try outputPassphrase(arguments, console: console, out: out)
            let encryption: PKCS12Encryption = arguments.isSet(Options.legacy) ? .legacy : .modern
            let bytes = try identity.pkcs12Representation(
                passphrase: passphrase, encryption: encryption, friendlyName: try arguments.value(Options.name))
            if toStdout {
                console.write(bytes)
                return .success
            }
            try OutputFile.write(bytes, to: out, holdsPrivateKey: true, overwrite: force)
            let scheme = encryption == .legacy ? "RC2-40/3DES, SHA-1 MAC" : "AES-256-CBC, SHA-256 MAC"
            console.print("wrote \(out): \(contents(credentials, key: "private key")) (\(scheme))")
        }
        return .success
    }

    /// `--to`, or the format `--out`'s extension names.
    static func target(_ arguments: ParsedArguments, out: String) throws -> Target {
        if let explicit = try arguments.value(Options.to) { return explicit }
        let name = out.split(separator: "/").last.map(String.init) ?? out
        let lowered = name.lowercased()
        if lowered.hasSuffix(".pem") { return .pem }
        if lowered.hasSuffix(".p12") || lowered.hasSuffix(".pfx") { return .p12 }
        throw CLIError.usage("cannot tell the output format from '\(out)': give --to pem or --to p12")
    }

    /// The .p12's passphrase: from the `--out-passphrase-*` options, else prompted twice on a
    /// terminal, else empty (with a warning).
    static func outputPassphrase(_ arguments: ParsedArguments, console: Console, out: String) throws -> String {
        if let explicit = try CredentialOptions.passphrase(
            environment: try arguments.value(Options.outPassphraseEnvironment),
            file: try arguments.value(Options.outPassphraseFile),
            option: "out-passphrase")
        {
            return explicit
        }
        if console.stdinIsTerminal, let first = Terminal.readSecret(prompt: "New passphrase for \(out): ") {
            guard Terminal.readSecret(prompt: "Repeat the passphrase: ") == first else {
                throw CLIError.usage("the two passphrases differ")
            }
            return first
        }
        console.warning("'\(out)' is protected by the empty passphrase (use --out-passphrase-env or -file)")
        return ""
    }

    /// "certificate, 1 chain certificate, private key".
    static func contents(_ credentials: Credentials, key: String?) -> String {
        var parts = ["certificate"]
        switch credentials.chain.count {
        case 0: break
        case 1: parts.append("1 chain certificate")
        case let count: parts.append("\(count) chain certificates")
        }
        if let key { parts.append(key) }
        return parts.joined(separator: ", ")
    }
}
