import Testing

@testable import APNsCore

/// The fast paths of the JSON Lines check (``NotificationLineParser/fastFields(_:)`` and
/// ``JSONScanner/fastSkipValue(_:from:)``) must agree with the full parser and scanner on every
/// input: where a fast path answers, the full one gives the same answer; where it does not, the
/// full one decides. Checked on a corpus of tricky lines and on many random mutations of it.
@Suite struct FastPathAgreementTests {
    static let token = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"
    static let payload = #"{"aps":{"alert":"You have a new message","badge":3,"sound":"ping.aiff"},"n":1}"#

    /// Lines in the common shape: the fast path must take every one of them.
    static let common: [String] = [
        #"{"token":"\#(token)","payload":\#(payload)}"#,
        #"{"token":"\#(token)","payload":\#(payload),"id":7}"#,
        #"{"payload":\#(payload),"token":"\#(token)","id":4294967295}"#,
        #"{"id":0,"expiry":1700000000,"priority":5,"token":"\#(token)","payload":{}}"#,
        #"  { "token" : "\#(token.uppercased())" , "payload" : { "a" : [ 1 , -2.5e+3 , true , false , null ] } }  "#,
        "{\t\"token\":\"\(token)\",\r\n\"payload\":{\"a\":\"\\u00e9\\n\\\"\\\\\\/\"},\"priority\":10}\r",
        #"{"token":"\#(token)","payload":{"aps":{"alert":"Grüße 😀 ✓ été"}}}"#,
        #"{"token":"\#(token)","payload":{"a":[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]],"b":{"c":{"d":{}}}}}"#,
        #"{"token":"\#(token)","payload":{"":"","0":0,"x":-0,"y":0.5,"z":1E9,"w":1e-9}}"#,
        #"{"token":"\#(token)","payload":{"long":"\#(String(repeating: "abcdefghij", count: 30))"}}"#,
    ]

    /// Lines the fast path must leave to the full parser (it may parse them, or refuse them).
    static let unusual: [String] = [
        "",
        "   ",
        "{}",
        #"{"token":"\#(token)"}"#,
        #"{"payload":{}}"#,
        #"{"token":"\#(token)","payload":{},"id":7,"id":8}"#,
        #"{"token":"\#(token)","payload":{},"token":"\#(token)"}"#,
        #"{"token":"\#(token)","payload":"{\"aps\":{}}"}"#,
        #"{"token":"<\#(token)>","payload":{}}"#,
        #"{"token":"740f4707 bebcf74f 9b7c25d4 8e335894 5f6aa01d a5ddb387 462c7eaf 61bb78ad","payload":{}}"#,
        #"{"token":"\#(token.dropLast(2))","payload":{}}"#,
        #"{"token":"\#(token)ab","payload":{}}"#,
        #"{"token":"\#(token.dropLast())g","payload":{}}"#,
        #"{"token":"\#(token.dropLast())\u0061","payload":{}}"#,
        #"{"tok\u0065n":"\#(token)","payload":{}}"#,
        #"{"token":"\#(token)","payload":{},"id":null}"#,
        #"{"token":"\#(token)","payload":{},"id":-1}"#,
        #"{"token":"\#(token)","payload":{},"id":01}"#,
        #"{"token":"\#(token)","payload":{},"id":1.0}"#,
        #"{"token":"\#(token)","payload":{},"id":1e3}"#,
        #"{"token":"\#(token)","payload":{},"id":4294967296}"#,
        #"{"token":"\#(token)","payload":{},"id":"7"}"#,
        #"{"token":"\#(token)","payload":{},"priority":7}"#,
        #"{"token":"\#(token)","payload":{},"priority":1}"#,
        #"{"token":"\#(token)","payload":{},"priority":256}"#,
        #"{"token":"\#(token)","payload":{},"expiry":99999999999}"#,
        #"{"token":"\#(token)","payload":{},"topic":"com.example"}"#,
        #"{"token":"\#(token)","payload":{},"tokens":1}"#,
        #"{"token":"\#(token)","payload":{},"prioritY":10}"#,
        #"{"token":"\#(token)","payload":{}}x"#,
        #"{"token":"\#(token)","payload":{}},"#,
        #"{"token":"\#(token)","payload":{},}"#,
        #"{"token":"\#(token)","payload":{"a":1,}}"#,
        #"{"token":"\#(token)","payload":{"a" 1}}"#,
        #"{"token":"\#(token)","payload":{"a":01}}"#,
        #"{"token":"\#(token)","payload":{"a":1.}}"#,
        #"{"token":"\#(token)","payload":{"a":.5}}"#,
        #"{"token":"\#(token)","payload":{"a":+1}}"#,
        #"{"token":"\#(token)","payload":{"a":tru}}"#,
        #"{"token":"\#(token)","payload":{"a":nul}}"#,
        #"{"token":"\#(token)","payload":{"a":"\x"}}"#,
        #"{"token":"\#(token)","payload":{"a":"\u12"}}"#,
        "{\"token\":\"\(token)\",\"payload\":{\"a\":\"tab\tinside\"}}",
        #"{"token":"\#(token)","payload":{"a":[1,2}}"#,
        #"{"token":"\#(token)","payload":{"a":{"b":1]}}"#,
        #"{"token":"\#(token)","payload":{"#,
        #"{"token":"\#(token)","payload":"#,
        #"{"token":"\#(token)","payload":{},"id"#,
        #"{"token":"\#(token)","payload":{},"id":"#,
        #"{"token":"\#(token)","payload":{},"i"#,
        #"{"token":"\#(token)","payload":{},"priority"#,
        #"{"token":"\#(token)","payload":{},"id":7"#,
        #"{"token":"\#(token)","#,
        #"{"token":"\#(token)"#,
        #"{"token":"#,
        "{",
        "[1,2,3]",
        #"{"token":"\#(token)","payload":{"a":"\#(String(repeating: "[", count: 70))1\#(String(repeating: "]", count: 70))"}}"#,
        #"{"token":"\#(token)","payload":\#(String(repeating: "[", count: 70))\#(String(repeating: "]", count: 70))}"#,
    ]

    @Test(arguments: common)
    func commonLinesTakeTheFastPathAndAgree(_ line: String) throws {
        for dialect in [NotificationLineParser.Dialect.binary, .http2] {
            let bytes = Array(line.utf8)
            let parser = NotificationLineParser(dialect: dialect)
            let fast = bytes.withUnsafeBytes { parser.fastFields($0) }
            #expect(fast != nil, "the fast path left a common line to the full parser: \(line)")
            try Self.checkAgreement(bytes, dialect: dialect)
        }
    }

    @Test(arguments: unusual)
    func unusualLinesAgreeWhateverPathTheyTake(_ line: String) throws {
        for dialect in [NotificationLineParser.Dialect.binary, .http2] {
            try Self.checkAgreement(Array(line.utf8), dialect: dialect)
        }
    }

    @Test func aNestingBeyondTheFastDepthIsLeftToTheFullScanner() {
        let deep = Array((String(repeating: "[", count: 65) + String(repeating: "]", count: 65)).utf8)
        let shallow = Array((String(repeating: "[", count: 64) + String(repeating: "]", count: 64)).utf8)
        deep.withUnsafeBytes { #expect(JSONScanner.fastSkipValue($0, from: 0) == nil) }
        shallow.withUnsafeBytes { #expect(JSONScanner.fastSkipValue($0, from: 0) == 128) }
    }

    @Test func theKeyWordsSpellTheKeys() {
        func word(_ text: String) -> UInt64 {
            text.utf8.reversed().reduce(0) { $0 << 8 | UInt64($1) }
        }
        typealias KeyWord = NotificationLineParser.KeyWord
        #expect(KeyWord.token == word("token"))
        #expect(KeyWord.payload == word("payload"))
        #expect(KeyWord.id == word("id"))
        #expect(KeyWord.expiry == word("expiry"))
        #expect(KeyWord.priority == word("priority"))
        typealias CompactWord = NotificationLineParser.CompactWord
        #expect(CompactWord.openToken == word(#"{"token""#))
        #expect(UInt64(CompactWord.colonQuote) == word(#":""#))
        #expect(CompactWord.quotePayload == word(#"","paylo"#))
        #expect(UInt64(CompactWord.payloadColon) == word(#"ad":"#))
    }

    @Test func theTokenDecoderAgreesWithTheHexParser() throws {
        var random = SplitMix64(seed: 18)
        for _ in 0..<2_000 {
            var digits = (0..<64).map { _ in Array("0123456789abcdefABCDEF".utf8).randomElement(using: &random)! }
            if random.next() % 4 == 0 {
                digits[Int(random.next() % 64)] = UInt8(truncatingIfNeeded: random.next())
            }
            let fast = digits.withUnsafeBytes { DeviceToken(plainHex64: $0.baseAddress!) }
            let full = digits.withUnsafeBytes { try? DeviceToken(hexBytes: $0) }
            let allHex = digits.allSatisfy { JSONScanner.hexValue($0) != nil }
            #expect(fast == (allHex ? full : nil))
        }
    }

    /// The digit scan's mask finds exactly the first byte that is not an ASCII digit, whatever
    /// follows it (every byte value at every position of a run of digits, and random words).
    @Test func theDigitMaskFindsTheFirstNonDigitExactly() {
        func firstNonDigit(_ bytes: [UInt8]) -> Int {
            bytes.firstIndex { !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } ?? 8
        }
        func scanned(_ bytes: [UInt8]) -> Int {
            let word = bytes.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
            let mask = JSONScanner.nonDigitMask(UInt64(littleEndian: word))
            return mask == 0 ? 8 : mask.trailingZeroBitCount >> 3
        }
        for position in 0..<8 {
            for value in 0...255 {
                var bytes = Array("31415926".utf8)
                bytes[position] = UInt8(value)
                #expect(scanned(bytes) == firstNonDigit(bytes), "\(value) at \(position)")
            }
        }
        var random = SplitMix64(seed: 99)
        for _ in 0..<20_000 {
            let bytes = (0..<8).map { _ in
                random.next() % 3 == 0
                    ? UInt8(truncatingIfNeeded: random.next()) : UInt8(ascii: "0") + UInt8(random.next() % 10)
            }
            #expect(scanned(bytes) == firstNonDigit(bytes), "\(bytes)")
        }
    }

    /// Every byte value at every position of an otherwise valid token (each of the four 16-digit
    /// blocks the decoder takes at once, both halves of each pair): only the 22 hex digits pass,
    /// and they decode to what the hex parser reads.
    @Test func theTokenDecoderTakesExactlyTheHexDigitsAtEveryPosition() throws {
        let base = Array("0123456789abcdefABCDEF0123456789fedcba9876543210FEDCBA9876543210".utf8)
        for position in 0..<64 {
            for value in 0...255 {
                var digits = base
                digits[position] = UInt8(value)
                let fast = digits.withUnsafeBytes { DeviceToken(plainHex64: $0.baseAddress!) }
                guard JSONScanner.hexValue(UInt8(value)) != nil else {
                    #expect(fast == nil, "byte \(value) at \(position)")
                    continue
                }
                #expect(
                    fast == (try digits.withUnsafeBytes { try DeviceToken(hexBytes: $0) }), "\(value) at \(position)")
            }
        }
    }

    /// Random mutations of the corpus: bytes replaced, inserted, removed and swapped, with a bias
    /// towards the bytes JSON cares about, so that most mutants are almost valid.
    @Test func randomMutationsAgree() throws {
        var random = SplitMix64(seed: 2026)
        let alphabet =
            Array(#"{}[]:,"\ ut0123456789-+.eE/bfnr"#.utf8) + [
                0x09, 0x0A, 0x0D, 0x00, 0x1F, 0x7F, 0xC3, 0xA9, 0xED, 0xF0, 0x9F, 0xFF,
            ]
        let corpus = (Self.common + Self.unusual).map { Array($0.utf8) }
        var fastAnswers = 0
        var fullAnswers = 0
        for round in 0..<20_000 {
            var bytes = corpus[round % corpus.count]
            for _ in 0...(random.next() % 3) {
                let position = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count))
                let byte = alphabet[Int(random.next() % UInt64(alphabet.count))]
                switch random.next() % 4 {
                case 0 where !bytes.isEmpty: bytes[position] = byte
                case 1: bytes.insert(byte, at: position)
                case 2 where !bytes.isEmpty: bytes.remove(at: position)
                default:
                    if bytes.count > 1 { bytes.swapAt(position, Int(random.next() % UInt64(bytes.count))) }
                }
            }
            let dialect: NotificationLineParser.Dialect = round % 5 == 0 ? .http2 : .binary
            let tookFastPath = try Self.checkAgreement(bytes, dialect: dialect)
            // Coverage is counted on the mutants of common lines only.
            guard round % corpus.count < Self.common.count else { continue }
            if tookFastPath { fastAnswers += 1 }
            let parser = NotificationLineParser(dialect: dialect)
            if (bytes.withUnsafeBytes { try? parser.parseWithoutFastPath($0, lineNumber: 7) }) != nil {
                fullAnswers += 1
            }
        }
        // The mutants of common lines that the full parser reads must mostly still go the
        // fast way (a mutation can make a token 63 digits long, which the fast path leaves alone).
        #expect(fastAnswers * 5 >= fullAnswers * 4, "fast path took \(fastAnswers) of \(fullAnswers)")
    }

    /// Checks one line; returns whether the fast path answered.
    @discardableResult
    static func checkAgreement(_ bytes: [UInt8], dialect: NotificationLineParser.Dialect) throws -> Bool {
        let parser = NotificationLineParser(dialect: dialect)
        return try bytes.withUnsafeBytes { line in
            // The scanner on every value start: where the fast one answers, the full one agrees.
            for start in line.indices {
                if let fastEnd = JSONScanner.fastSkipValue(line, from: start) {
                    let fullEnd = try? JSONScanner.skipValue(line, from: start, depth: 1)
                    #expect(
                        fullEnd == fastEnd,
                        "fastSkipValue ended at \(fastEnd), skipValue at \(fullEnd.map(String.init) ?? "an error") in \(String(decoding: line, as: UTF8.self)) from \(start)"
                    )
                }
            }
            let full: Result<PushNotification?, LegacyAPNsError>
            do {
                full = .success(try parser.parseWithoutFastPath(line, lineNumber: 7))
            } catch let error as LegacyAPNsError {
                full = .failure(error)
            }
            // The parser as a whole (fast path first) gives what the full parser gives.
            let whole: Result<PushNotification?, LegacyAPNsError>
            do {
                whole = .success(try parser.parse(line, lineNumber: 7))
            } catch let error as LegacyAPNsError {
                whole = .failure(error)
            }
            #expect(
                "\(whole)" == "\(full)",
                "parse and the full parser disagree on \(String(decoding: line, as: UTF8.self))")
            guard let fast = parser.fastFields(line) else { return false }
            let expected = PushNotification(
                token: fast.token, payload: Payload(unvalidatedBytes: Array(line[fast.payload])),
                identifier: fast.identifier ?? 7, expiration: fast.expiration, priority: fast.priority)
            #expect(
                (try? full.get()) == expected,
                "the fast path read \(expected), the full parser \(full) from \(String(decoding: line, as: UTF8.self))")
            return true
        }
    }
}
