import APNsCore

/// A small, strict reader of DER's tag-length-value elements, for the few structures LegacyAPNs
/// reads itself (Apple's topics extension, telling a PKCS#12 file from a certificate).
///
/// It never traps and never reads out of bounds: anything malformed (high tag numbers, indefinite
/// or oversized lengths, a length running past the end) makes ``next()`` return nil.
struct DERReader {
    /// One element: its identifier octet and the range of its contents within the input.
    struct Element {
        /// The identifier octet (`0x30` SEQUENCE, `0x0C` UTF8String, ...).
        var tag: UInt8
        /// The content octets.
        var content: ArraySlice<UInt8>

        var isConstructed: Bool { tag & 0x20 != 0 }
    }

    /// DER tags LegacyAPNs cares about.
    enum Tag {
        static let integer: UInt8 = 0x02
        static let utf8String: UInt8 = 0x0C
        static let printableString: UInt8 = 0x13
        static let ia5String: UInt8 = 0x16
        static let sequence: UInt8 = 0x30
    }

    private let bytes: ArraySlice<UInt8>
    private var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.index = bytes.startIndex
    }

    init(_ bytes: [UInt8]) {
        self.init(bytes[...])
    }

    /// Whether every byte has been read.
    var isAtEnd: Bool { index >= bytes.endIndex }

    /// Reads the next element, or returns nil (without moving) at the end or on malformed input.
    mutating func next() -> Element? {
        guard let (tag, length, headerLength) = Self.header(bytes[index...]) else { return nil }
        let start = index + headerLength
        guard length <= bytes.endIndex - start else { return nil }
        index = start + length
        return Element(tag: tag, content: bytes[start..<start + length])
    }

    /// Decodes an element header: tag, content length and the header's own length. Does not check
    /// that the content is all there, so a truncated file can still be recognised by its start.
    static func header(_ bytes: ArraySlice<UInt8>) -> (tag: UInt8, length: Int, headerLength: Int)? {
        var index = bytes.startIndex
        guard index < bytes.endIndex else { return nil }
        let tag = bytes[index]
        // Tag numbers of 31 and above take more octets; nothing read here uses them.
        guard tag & 0x1F != 0x1F else { return nil }
        index += 1
        guard index < bytes.endIndex else { return nil }
        let first = bytes[index]
        index += 1
        if first < 0x80 { return (tag, Int(first), 2) }
        // 0x80 is the indefinite form (BER, not DER); more than 4 length octets is never sane here.
        let count = Int(first & 0x7F)
        guard count >= 1, count <= 4, bytes.endIndex - index >= count else { return nil }
        var length = 0
        for byte in bytes[index..<index + count] {
            length = length << 8 | Int(byte)
        }
        // DER uses the shortest form; a long form below 128 or with a leading zero is not DER.
        guard length >= 0x80, bytes[index] != 0 else { return nil }
        return (tag, length, 2 + count)
    }

    /// The text of a string element (UTF8String, PrintableString or IA5String), or nil.
    static func string(_ element: Element) -> String? {
        switch element.tag {
        case Tag.utf8String, Tag.printableString, Tag.ia5String:
            return String(validating: element.content, as: UTF8.self)
        default:
            return nil
        }
    }
}
