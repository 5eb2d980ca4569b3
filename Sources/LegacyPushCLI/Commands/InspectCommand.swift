internal import APNsRuntime
import CommandLineKit
import LegacyAPNs

/// `legacy-push inspect`: what a push certificate is for and how long it lasts.
enum InspectCommand {
    enum Options {
        static let key = Option<String>.text("key", "path", help: "A PEM private key to check against the certificate.")
        static let json = Flag("json", help: "Print one JSON object instead of the summary.")
        static let now = Option<Int64>.integer(
            "now", "unix-seconds", help: "Judge validity at this time instead of now (for scripts and tests).",
            range: 0...Int64.max)
    }

    static var spec: CommandSpec {
        CommandSpec(
            name: "inspect",
            abstract: "Show a certificate's topic, environment and expiry.",
            discussion: """
                Reads a .p12/.pfx, PEM or DER .cer (detected from the content) and prints who the \
                certificate is for (the bundle id in its UID, the topics of a universal certificate), \
                where it works (production, development or both), its validity, key and fingerprints.

                An APNs signing key (AuthKey_<KEYID>.p8, or its PEM public key) shows its key id, curve \
                and public-key fingerprint instead.

                Warns on stderr when fewer than 30 days remain. Exits 1 when the certificate has \
                expired, after the summary and a line 'legacy-push: expired: ...' on stderr, and 2 when a \
                given --key does not match it (after printing the summary, with keyMatches false).

                In a PEM bundle without a key the provider (leaf) certificate is the first one that is \
                not a CA, so CA certificates before it are listed as its chain; the Team ID is the leaf's \
                OU (a CA has none). --json lists each topic's kinds under topicKinds, the same kinds \
                the summary shows in parentheses.
                """,
            arguments: [ArgumentSpec(name: "path", help: "The .p12/.pfx, PEM, .cer or .p8 file to inspect.")],
            options: [Options.key.spec, Options.json.spec, Options.now.spec] + CredentialOptions.passphraseOnly,
            run: { arguments, console in try run(arguments, console: console) },
            examples: [
                "legacy-push inspect push.p12 --passphrase-file pass.txt",
                "legacy-push inspect push.pem --key push.key --json",
                "legacy-push inspect aps.cer --json | jq -r .notAfter",
            ])
    }

    static func run(_ arguments: ParsedArguments, console: Console) throws -> ExitStatus {
        let path = arguments.positionals[0]
        if let status = try inspectSigningKeyIfOne(path, arguments: arguments, console: console) { return status }
        let keyPath = try arguments.value(Options.key)
        let now = try arguments.value(Options.now) ?? Host.unixTime()
        let credentials = try CredentialOptions.loadCredentials(
            path, keyPath: keyPath, arguments: arguments, console: console)
        let summary = CertificateSummary(credentials, now: now)

        if arguments.isSet(Options.json) {
            console.print(summary.jsonRepresentation)
        } else {
            for line in describe(summary, format: credentials.format) { console.print(line) }
        }

        if summary.keyMatches == false {
            throw LegacyAPNsError(.keyMismatch, CredentialOptions.mismatchReason(certPath: path, keyPath: keyPath))
        }
        if summary.isExpired {
            // Not a warning: an expired certificate cannot be used (exit 1, cli-contract.md).
            console.diagnostic(
                "legacy-push: expired: the certificate expired on \(summary.notAfterISO8601) "
                    + "(\(daysAgo(summary)) days ago); gateways refuse it: renew it")
            return .refused
        }
        if summary.isNotYetValid {
            console.warning("certificate is not valid before \(summary.notBeforeISO8601)")
        } else if summary.expiresSoon {
            let days = summary.daysLeft
            console.warning(
                days == 0
                    ? "certificate expires in less than a day (\(summary.notAfterISO8601))"
                    : "certificate expires in \(days) day\(days == 1 ? "" : "s") (\(summary.notAfterISO8601))")
        }
        return .success
    }

    /// Whole days since an expired certificate's end of validity.
    static func daysAgo(_ summary: CertificateSummary) -> Int64 {
        (summary.now - summary.notAfter) / 86400
    }

    /// The human summary, one aligned `label  value` row a line.
    static func describe(_ summary: CertificateSummary, format: CredentialFormat) -> [String] {
        var rows: [(String, String)] = [
            ("Subject", summary.subject),
            ("Issuer", summary.issuer),
            ("Topic", summary.topic ?? "(none: the subject has no UID)"),
        ]
        for (index, topic) in summary.pushTopics.enumerated() {
            rows.append((index == 0 ? "Topics" : "", topic.description))
        }
        if let teamID = summary.teamID { rows.append(("Team ID", teamID)) }
        let environment: String =
            switch summary.environment {
            case .both: "both (production and sandbox)"
            case .production: "production"
            case .development: "development (sandbox)"
            case .unknown: "unknown (no Apple environment marker)"
            }
        rows.append(("Environment", environment))
        rows.append(("Valid from", summary.notBeforeISO8601))
        let state: String
        if summary.isExpired {
            state = "EXPIRED \(daysAgo(summary)) days ago"
        } else if summary.isNotYetValid {
            state = "not yet valid"
        } else {
            state = "\(summary.daysLeft) day\(summary.daysLeft == 1 ? "" : "s") left"
        }
        rows.append(("Valid until", "\(summary.notAfterISO8601) (\(state))"))
        let match: String =
            switch summary.keyMatches {
            case true?: "private key matches"
            case false?: "private key DOES NOT match"
            case nil: "no private key"
            }
        rows.append(("Key", "\(summary.key), \(match)"))
        rows.append(("SHA-256", summary.sha256Fingerprint))
        rows.append(("SHA-1", summary.sha1Fingerprint))
        rows.append(("Serial", summary.serialNumber))
        for (index, subject) in summary.chainSubjects.enumerated() {
            rows.append((index == 0 ? "Chain" : "", subject))
        }
        let formatName: String =
            switch format {
            case .pkcs12: "PKCS#12"
            case .pem: "PEM"
            case .der: "DER"
            }
        rows.append(("Format", formatName))
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { label, value in
            label + String(repeating: " ", count: width - label.count + 2) + value
        }
    }
}
