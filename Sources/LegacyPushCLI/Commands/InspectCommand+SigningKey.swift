import CommandLineKit
import LegacyAPNs

/// `legacy-push inspect AuthKey_<KEYID>.p8`: what an APNs token-signing key is (kept apart from
/// the certificate summary, which it shares nothing with).
extension InspectCommand {
    /// Inspects `path` as an APNs signing key when it is one (a `.p8` file, or PEM holding a
    /// public key and no certificate) and returns the exit status; nil for every other file,
    /// which the certificate summary then handles as before.
    ///
    /// - Throws: ``LegacyAPNsError`` naming the file when it is a `.p8` that is not a usable
    ///   signing key (exit 2), ``CLIError`` for options that do not apply to keys.
    static func inspectSigningKeyIfOne(_ path: String, arguments: ParsedArguments, console: Console) throws
        -> ExitStatus?
    {
        let isP8 = path.lowercased().hasSuffix(".p8")
        if !isP8 && !path.lowercased().hasSuffix(".pem") { return nil }
        let bytes = try Files.read(path, limit: 1024 * 1024)
        let labels = SigningKey.pemLabels(bytes)
        let isPublicKey = labels.contains("PUBLIC KEY") && !labels.contains { $0.hasSuffix("CERTIFICATE") }
        guard isP8 || isPublicKey else { return nil }
        if arguments.has(InspectCommand.Options.key) {
            throw CLIError.usage("--key does not apply to an APNs signing key ('\(path)')")
        }

        let publicKey: SigningKey.PublicKey
        let kind: String
        let kindText: String
        if isPublicKey {
            publicKey = try CredentialOptions.naming(path) { try SigningKey.PublicKey(pemRepresentation: bytes) }
            (kind, kindText) = ("signingPublicKey", "APNs signing public key (verifies tokens, cannot sign)")
        } else {
            publicKey = try CredentialOptions.naming(path) { try SigningKey(pemRepresentation: bytes) }.publicKey
            (kind, kindText) = ("signingKey", "APNs signing key (.p8, EC private key)")
        }
        let fileName = String(path.split(separator: "/").last ?? "")
        let keyID =
            SigningKey.keyID(fromFileName: fileName)
            ?? (fileName.hasSuffix(".pub.pem")
                ? SigningKey.keyID(fromFileName: String(fileName.dropLast(".pub.pem".count)) + ".p8") : nil)

        if arguments.isSet(InspectCommand.Options.json) {
            var writer = JSONWriter()
            try writer.writeObject([
                ("kind", .string(kind)), ("keyID", keyID.map(JSONValue.string) ?? .null),
                ("curve", .string(publicKey.curve)), ("fingerprint", .string(publicKey.fingerprint)),
            ])
            console.print(String(decoding: writer.bytes, as: UTF8.self))
            return .success
        }
        let rows = [
            ("Kind", kindText),
            ("Key ID", keyID ?? "unknown (name the file AuthKey_<KEYID>.p8)"),
            ("Curve", publicKey.curve),
            ("Fingerprint", "\(publicKey.fingerprint) (SHA-256 of the public key)"),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        for (label, value) in rows {
            console.print(label + String(repeating: " ", count: width - label.count + 2) + value)
        }
        return .success
    }
}
