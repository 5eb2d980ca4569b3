import APNsCore

/// The head of an HTTP/1.1 message: its start line and header fields, up to the blank line.
/// Parsed once for both directions: requests the runtime's ``HTTPServer`` reads, and the answer a
/// proxy gives a `CONNECT` (``ProxyTunnel``).
///
/// ```
/// GET /metrics HTTP/1.1\r\n            start line: three parts separated by single spaces
/// Host: 127.0.0.1:9100\r\n             fields: name ":" optional white space value
/// \r\n                                 the end of the head (a bare \n is accepted too)
/// ```
///
/// Decoder contract: ``parse(_:maximumSize:)`` returns nil while the blank line has not arrived
/// (and nothing is consumed), the head and its length once it has, and throws for bytes no more
/// input can make valid (a head longer than the maximum, a broken start line or field).
package struct HTTPHead: Sendable {
    /// Why bytes are not an HTTP/1.1 head.
    package enum Failure: Error, Hashable, Sendable {
        /// No blank line within this many bytes.
        case tooLarge(Int)
        /// The start line is not three parts, or a field has no name or colon.
        case malformed(String)
    }

    /// The start line's three parts: method, target, version for a request; version, status code,
    /// reason phrase for a response (the phrase may hold spaces, and may be empty).
    package var start: (String, String, String)
    /// The fields in order, names lowercased, values without surrounding white space.
    package var fields: [(name: String, value: String)]

    /// The first value of field `name` (lowercase), if present.
    package func field(_ name: String) -> String? {
        fields.first { $0.name == name }?.value
    }

    /// Parses the head at the start of `bytes`: nil when it is not complete yet, else the head and
    /// the number of bytes it took (what follows is the body, or the next message).
    package static func parse(_ bytes: UnsafeRawBufferPointer, maximumSize: Int) throws(Failure) -> (HTTPHead, Int)? {
        // The end of the head: an empty line.
        var end: Int?
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x0A {
                if index + 1 < bytes.count, bytes[index + 1] == 0x0A {
                    end = index + 2
                    break
                }
                if index + 2 < bytes.count, bytes[index + 1] == 0x0D, bytes[index + 2] == 0x0A {
                    end = index + 3
                    break
                }
            }
            index += 1
        }
        guard let end else {
            if bytes.count > maximumSize { throw .tooLarge(maximumSize) }
            return nil
        }
        guard end <= maximumSize else { throw .tooLarge(maximumSize) }
        var lines: [String] = []
        var lineStart = 0
        for position in 0..<end where bytes[position] == 0x0A {
            var lineEnd = position
            if lineEnd > lineStart, bytes[lineEnd - 1] == 0x0D { lineEnd -= 1 }
            let line = UnsafeRawBufferPointer(rebasing: bytes[lineStart..<lineEnd])
            guard !line.contains(where: { $0 == 0 || $0 == 0x0D }) else { throw .malformed("a control character") }
            lines.append(String(decoding: line, as: UTF8.self))
            lineStart = position + 1
        }
        // The last line is the empty one.
        lines.removeLast()
        guard let first = lines.first else { throw .malformed("no start line") }
        let parts = first.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw .malformed("the start line '\(first.prefix(80))'")
        }
        var head = HTTPHead(
            start: (String(parts[0]), String(parts[1]), parts.count == 3 ? String(parts[2]) : ""), fields: [])
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                !line[..<colon].contains(where: { $0 == " " || $0 == "\t" })
            else { throw .malformed("the field line '\(line.prefix(80))'") }
            let value = line[line.index(after: colon)...].trimmingSpaces
            head.fields.append((line[..<colon].lowercased(), String(value)))
        }
        return (head, end)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
