/// The id of a broadcast channel: the `apns-channel-id` APNs answers a channel's creation with,
/// and every later request about the channel (read, delete, broadcast) carries.
///
/// Apple's ids are random base64 of unstated size. This type takes any non-empty base64 text
/// (`A-Z a-z 0-9 + /`, then at most two `=`) of at most ``maximumCount`` characters, keeps it as
/// given, and makes new ones of 16 random bytes (24 characters) for the simulator.
public struct ChannelID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The id's text, as APNs sent it.
    public let rawValue: String

    /// The longest id accepted.
    public static let maximumCount = 256

    /// Takes an id; nil when `text` is not base64.
    public init?(_ text: some StringProtocol) {
        var utf8 = Array(text.utf8)
        guard Self.isBase64(&utf8) else { return nil }
        rawValue = String(text)
    }

    /// Takes an id's bytes; nil when they are not base64.
    package init?(utf8 bytes: UnsafeRawBufferPointer) {
        var copy = Array(bytes)
        guard Self.isBase64(&copy) else { return nil }
        rawValue = String(decoding: copy, as: UTF8.self)
    }

    /// A new random id: 16 bytes from `generator`, base64 with padding.
    public static func random(using generator: inout some RandomNumberGenerator) -> ChannelID {
        var bytes: [UInt8] = []
        for _ in 0..<2 { withUnsafeBytes(of: generator.next()) { bytes.append(contentsOf: $0) } }
        return ChannelID(validated: base64(bytes))
    }

    private init(validated text: String) { rawValue = text }

    /// The id.
    public var description: String { rawValue }

    /// Orders ids by their text.
    public static func < (lhs: ChannelID, rhs: ChannelID) -> Bool { lhs.rawValue < rhs.rawValue }

    private static func isBase64(_ bytes: inout [UInt8]) -> Bool {
        guard !bytes.isEmpty, bytes.count <= maximumCount else { return false }
        var padding = 0
        for byte in bytes {
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            guard padding == 0, alphabet.utf8.contains(byte) else { return false }
        }
        return padding <= 2 && padding < bytes.count
    }

    private static let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    /// Standard base64 with padding.
    static func base64(_ bytes: [UInt8]) -> String {
        let table = Array(alphabet.utf8)
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            var value: UInt32 = 0
            for (offset, byte) in chunk.enumerated() { value |= UInt32(byte) << (16 - 8 * offset) }
            for position in 0..<4 {
                if position <= chunk.count {
                    output.append(table[Int((value >> (18 - 6 * position)) & 0x3F)])
                } else {
                    output.append(UInt8(ascii: "="))
                }
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }
}
