import APNsCore
import APNsCredentials
internal import APNsRuntime

/// The feedback tuples of one connection as they arrive; see ``FeedbackReader/records(rawSink:)``.
///
/// Iterating throws only ``LegacyAPNsError``, after every complete tuple was yielded.
public struct FeedbackRecordStream: AsyncSequence, Sendable {
    /// One tuple.
    public typealias Element = FeedbackRecord

    let settings: FeedbackConnection.Settings
    let rawSink: FeedbackReader.RawSink?
    let bufferLimit: Int

    /// Starts a new read (a new connection) on the first call to ``AsyncIterator/next()``.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(stream: self)
    }

    /// Iterates one connection's tuples. Dropping the iterator closes the connection.
    public struct AsyncIterator: AsyncIteratorProtocol {
        private let stream: FeedbackRecordStream
        private var read: ReadHandle?
        private var batch: [FeedbackRecord] = []
        private var index = 0
        private var isDone = false

        init(stream: FeedbackRecordStream) {
            self.stream = stream
        }

        /// The next tuple; nil after the service closed cleanly.
        ///
        /// - Throws: the read's ``LegacyAPNsError`` after the last complete tuple (once; later calls
        ///   return nil).
        public mutating func next() async throws -> FeedbackRecord? {
            if index < batch.count {
                defer { index += 1 }
                return batch[index]
            }
            guard !isDone else { return nil }
            let read = self.read ?? ReadHandle(stream)
            self.read = read
            switch await read.channel.next() {
            case .records(let records):
                batch = records
                index = 1
                return records[0]
            case .end(let failure):
                isDone = true
                batch = []
                self.read = nil
                if let failure { throw failure }
                return nil
            }
        }
    }

    /// A running read; stops it when the iterator lets go.
    final class ReadHandle: Sendable {
        let channel: BatchChannel
        let stop = StopFlag()

        init(_ stream: FeedbackRecordStream) {
            let channel = BatchChannel(limit: stream.bufferLimit)
            self.channel = channel
            let (settings, stop, rawSink) = (stream.settings, stop, stream.rawSink)
            OSThread.start(name: "apns-feedback") {
                let connection = FeedbackConnection(settings: settings, stop: stop, rawSink: rawSink)
                let outcome = connection.run { batch in channel.push(batch) }
                channel.finish(outcome.failure)
            }
        }

        deinit {
            stop.set()
            channel.cancel()
        }
    }
}
