import APNsRuntime
import Foundation
import LegacyAPNs

/// A legacy sender as pushjack and most old libraries were written: it writes a burst of frames,
/// then nothing, and waits (up to `errorTimeout`) for an error response; after one naming *x* it
/// reconnects and sends everything after *x*. Every answer is therefore due while the sender is
/// quiet: a bridge that only notices due answers when the sender writes again (or when its socket
/// poll times out) shows here as a rate of a few hundred a second.
///
/// Each burst runs from the first unsent notification to 50 past the next bad token (the sender
/// knows where they are, so every burst is answered and none waits for the timeout), one
/// connection per burst; the last burst, after the last bad token, gets no answer, and its wait
/// is not counted in `seconds`.
enum QuietSender {
    struct Outcome {
        /// First connection to the last answer (the final quiet wait left out).
        var seconds: Double
        var connections = 0
        var errorResponses = 0
        /// What was wrong with an answer, if anything was (an answer naming the wrong identifier).
        var failure: String?
    }

    static func run(port: UInt16, count: Int, bad: Set<Int>, errorTimeout: Double = 1) throws -> Outcome {
        let context = try TLSContext.client(Package.senderTLS())
        // The frames, encoded once: what the sender writes is then only bytes (identifier = index).
        var offsets = [0]
        var bytes = ByteWriter(capacity: count * 200)
        for index in 0..<count {
            let payload =
                #"{"aps":{"alert":{"title":"Benchmark","body":"A notification of about 100 bytes"}},"n":""#
                + String(format: "%07d", index) + #""}"#
            let notification = PushNotification(
                token: try DeviceToken(hexString: BridgeBenchmarks.tokenHex(index)),
                payload: Payload(unvalidatedBytes: Array(payload.utf8)), identifier: UInt32(index))
            FrameEncoder.encodeValidated(notification, as: .enhanced, identifier: UInt32(index), into: &bytes)
            offsets.append(bytes.count)
        }
        let frames = bytes.bytes
        let badSorted = bad.sorted()
        let response = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { response.deallocate() }

        var outcome = Outcome(seconds: 0)
        let start = Monotonic.now()
        var quietWait = 0.0
        var next = 0
        while next < count {
            let nextBad = badSorted.first { $0 >= next }
            let end = nextBad.map { Swift.min(count, $0 + 50) } ?? count
            outcome.connections += 1
            let session = try TLSSession.connect(
                to: Endpoint(host: "127.0.0.1", port: port), context: context, timeout: 5)
            defer { session.close() }
            let failure = frames[offsets[next]..<offsets[end]].withUnsafeBytes {
                session.writeAll($0, timeout: 10)
            }
            if let failure { throw HTTP2ServeBenchmarks.BenchmarkError("the bridge stopped reading: \(failure)") }
            let waitStart = Monotonic.now()
            var received = 0
            reading: while received < ErrorResponse.byteCount {
                switch session.read(
                    into: UnsafeMutableRawBufferPointer(rebasing: response[received...]),
                    waitingUpTo: errorTimeout - (Monotonic.now() - waitStart))
                {
                case .done(let got): received += got
                default: break reading
                }
            }
            guard received >= ErrorResponse.byteCount else {
                // No answer: the burst was delivered (the sender's only way of knowing).
                if nextBad != nil {
                    outcome.failure = "no answer for the burst with bad token \(nextBad!)"
                }
                quietWait = Monotonic.now() - waitStart
                next = end
                continue
            }
            outcome.errorResponses += 1
            // Command 8, the status, the identifier (big-endian).
            let answer = ErrorResponse(
                status: StatusCode(rawValue: response[1]),
                identifier: UInt32(bigEndian: response.loadUnaligned(fromByteOffset: 2, as: UInt32.self)))
            guard response[0] == Command.errorResponse.rawValue else {
                throw HTTP2ServeBenchmarks.BenchmarkError("not an error response: command \(response[0])")
            }
            if Int(answer.identifier) != nextBad, outcome.failure == nil {
                outcome.failure = "answer \(answer) for the burst with bad token \(nextBad ?? -1)"
            }
            next = Int(answer.identifier) + 1
        }
        outcome.seconds = Monotonic.now() - start - quietWait
        return outcome
    }
}

extension Package {
    /// The fixtures' sender identity (`universal-modern.p12`) trusting the fixtures' CA: what a
    /// benchmark's sender presents to our simulators and bridges.
    static func senderTLS() throws -> TLSConfiguration {
        let identity = try ClientIdentity(
            pkcs12: Array(try Data(contentsOf: URL(fileURLWithPath: certs("universal-modern.p12")))),
            passphrase: "secret")
        let ca = Certificate.certificates(
            pemRepresentation: Array(try Data(contentsOf: URL(fileURLWithPath: certs("ca.pem")))))
        return TLSConfiguration(identity: identity, trust: .certificates(ca))
    }
}
