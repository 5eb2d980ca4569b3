import APNsCore
import Foundation
import Testing

/// The frame fixtures in `Fixtures/frames`, as described by their `manifest.jsonl`.
package enum FrameFixtures {
    package static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/frames")

    package struct Entry: Sendable, CustomTestStringConvertible {
        package var name: String
        package var fields: [String: JSONField]

        package var testDescription: String { name }
        package var kind: String { fields["kind"]!.string! }
        package func int(_ key: String) -> Int? { fields[key]?.int }

        package var bin: [UInt8] {
            (try? Array(Data(contentsOf: directory.appendingPathComponent(name + ".bin")))) ?? []
        }
        package var hexText: String {
            (try? String(contentsOf: directory.appendingPathComponent(name + ".hex"), encoding: .utf8)) ?? ""
        }

        package var format: FrameFormat {
            switch fields["format"]?.string {
            case "simple": .simple
            case "frame": .itemized
            default: .enhanced
            }
        }

        /// The notification a "notification" fixture holds.
        package func notification() throws -> PushNotification {
            PushNotification(
                token: try DeviceToken(hexString: fields["token"]!.string!),
                payload: Payload(unvalidatedBytes: Array(fields["payload"]!.string!.utf8)),
                identifier: int("id").map(UInt32.init),
                expiration: int("expiry").map { Expiration(rawValue: UInt32($0)) },
                priority: int("priority").map { Priority(rawValue: UInt8($0)) })
        }
    }

    package enum JSONField: Sendable {
        case string(String)
        case int(Int)
        case bool(Bool)
        case null

        package var string: String? {
            if case .string(let value) = self { return value }
            return nil
        }
        package var int: Int? {
            if case .int(let value) = self { return value }
            return nil
        }
        package var bool: Bool {
            if case .bool(let value) = self { return value }
            return false
        }
    }

    package static let all: [Entry] = {
        let text = (try? String(contentsOf: directory.appendingPathComponent("manifest.jsonl"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").map { line in
            let object = try! JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            var fields: [String: JSONField] = [:]
            for (key, value) in object {
                switch value {
                case let text as String: fields[key] = .string(text)
                case let number as NSNumber where key == "truncated": fields[key] = .bool(number.boolValue)
                case let number as NSNumber: fields[key] = .int(number.intValue)
                default: fields[key] = .null
                }
            }
            return Entry(name: object["name"] as! String, fields: fields)
        }
    }()

    package static var notifications: [Entry] { all.filter { $0.kind == "notification" } }
    package static var errorResponses: [Entry] { all.filter { $0.kind == "error-response" } }
    package static var malformed: [Entry] { all.filter { $0.kind == "malformed" } }

    /// The bytes an annotated `.hex` file spells: hex pairs, `#` to end of line is a comment.
    package static func bytes(fromAnnotatedHex text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let code = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            for pair in code.split(separator: " ") { bytes.append(UInt8(pair, radix: 16)!) }
        }
        return bytes
    }
}

extension FrameFixtures {
    /// `02 | length | items...`: the identifier item (when given) first, then a token item of 32
    /// bytes, then the header of a payload item of `payloadLength` bytes (its bytes not included).
    package static func itemFrameHead(length: UInt32, identifier: UInt32?, payloadLength: UInt16) -> [UInt8] {
        var writer = ByteWriter(capacity: 64)
        writer.writeInteger(UInt8(2))
        writer.writeInteger(length)
        if let identifier {
            writer.writeInteger(UInt8(3))
            writer.writeInteger(UInt16(4))
            writer.writeInteger(identifier)
        }
        writer.writeInteger(UInt8(1))
        writer.writeInteger(UInt16(32))
        writer.writeBytes([UInt8](repeating: 0xAB, count: 32))
        writer.writeInteger(UInt8(2))
        writer.writeInteger(payloadLength)
        return writer.bytes
    }
}
