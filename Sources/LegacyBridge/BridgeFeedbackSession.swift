import APNsCore
import APNsCredentials
internal import APNsRuntime

/// One connection to the bridge's feedback service: the sender's certificate names its topic,
/// the stored tuples of that topic are written, and only those written completely are forgotten,
/// as Apple's feedback service handed each tuple out once. A deletion that does not commit (a full
/// disk) does not make them served again: the store remembers them as served (``BridgeStore``).
struct BridgeFeedbackSession {
    let core: BridgeCore
    let client: String

    /// Tuples written per connection at most (the rest wait for the next connection).
    static let maximumTuples = 100_000

    func run(_ socket: Socket, pending: PendingHandshake) {
        guard let session = core.acceptSender(socket, client: client, pending: pending) else { return }
        // The topic its route's notifications were stored under (a route's apnsTopic, or --topic).
        let certificate = session.peerCertificate
        let route = core.route(
            for: certificate, presented: session.peerChain, topic: certificate?.topic,
            fingerprint: certificate?.sha256Fingerprint ?? [])
        guard let topic = route?.translation.fixedTopic ?? certificate?.topic else {
            session.closeGently(drainTimeout: 0.5)
            core.refused(client, reason: "its certificate names no topic")
            return
        }
        let records: [FeedbackRecord]
        switch core.store.read(topic: topic, limit: Self.maximumTuples) {
        case .success(let found):
            records = found
        case .failure(let error):
            core.emit(.storeFailed(reason: error.reason))
            session.closeGently(drainTimeout: 0.5)
            return
        }
        // Written in batches; a batch is forgotten only once every byte of it was written.
        var served = 0
        let batchSize = 512
        var start = 0
        while start < records.count {
            let batch = Array(records[start..<Swift.min(records.count, start + batchSize)])
            var writer = ByteWriter(capacity: batch.count * 38)
            for record in batch { record.encode(into: &writer) }
            guard session.writeAll(writer.bytes, timeout: 10) == nil else {
                // Not written whole: this batch and the rest go to the next reader.
                core.store.giveBack(Array(records[start...]), topic: topic)
                break
            }
            served += batch.count
            start += batchSize
            switch core.store.forget(batch, topic: topic) {
            case .forgotten:
                continue
            case .remembered(let failure):
                // Not served again all the same; the deletion is retried. Logged once.
                if let failure {
                    core.emit(
                        .storeFailed(
                            reason: "\(failure.reason): the tuples served are remembered as served (not served "
                                + "again) and deleted once the store takes writes again"))
                }
                continue
            case .failed(let error):
                core.emit(.storeFailed(reason: "\(error.reason): the tuples served may be served again"))
            }
            break
        }
        core.count { $0.feedbackServed += served }
        core.emit(.feedbackServed(client: client, topic: topic, count: served))
        session.closeGently(drainTimeout: 1)
    }
}
