import APNsCore
internal import APNsRuntime

extension GatewaySimulator.Configuration {
    /// Shows what this simulator receives in `inbox` too: accepted notifications through the
    /// recorder hand-over (a batch at a time, after the recorder already configured), rejections
    /// through the events (after the handler already configured). Confirmation barriers are
    /// answered, not received: they never appear.
    public mutating func showInInbox(_ inbox: PushInbox) {
        recorder = BinaryInboxRecorder(inbox: inbox, next: recorder)
        alsoReport { inbox.add($0) }
    }
}

extension ProviderSimulator.Configuration {
    /// Shows what this simulator receives in `inbox` too: accepted requests through the recorder
    /// hand-over (a batch at a time, after the recorder already configured), rejections through
    /// the events (after the handler already configured).
    public mutating func showInInbox(_ inbox: PushInbox) {
        recorder = ProviderInboxRecorder(inbox: inbox, next: recorder)
        alsoReport { inbox.add($0) }
    }
}

extension PushInbox {
    /// Adds the rejection a binary simulator's event reports (other events add nothing).
    public func add(_ event: SimulatorEvent) {
        guard case .rejected(let connection, let response, let token, let reason) = event else { return }
        add([
            InboxNotification(
                receivedMilliseconds: nowMilliseconds, transport: .binary, connection: connection,
                token: token, status: "\(response.status.rawValue) \(reason)",
                statusCode: Int(response.status.rawValue), content: .rejected)
        ])
    }

    /// Adds the rejection an HTTP/2 simulator's event reports (other events add nothing).
    public func add(_ event: ProviderSimulatorEvent) {
        guard case .rejected(let connection, _, let response, let token, _) = event else { return }
        add([
            InboxNotification(
                receivedMilliseconds: nowMilliseconds, transport: .http2, connection: connection,
                token: token, status: response.reason?.rawValue ?? "status \(response.status)",
                statusCode: response.status, content: .rejected)
        ])
    }

    /// Adds accepted HTTP/2 requests (with ``PushInbox/simulatesDevices``, each goes to its
    /// device, and gets a fate), kept as their batch until read while every device is online.
    public func add(requests: [AcceptedRequest]) {
        let now = nowMilliseconds
        let fate: InboxNotification.Fate? = simulatesDevices ? .delivered : nil
        add(lazily: requests.count, needsDevices: fate != nil) { index in
            let accepted = requests[index]
            var request = accepted.request
            request.authorizationToken = nil
            var notification = InboxNotification(
                receivedMilliseconds: now, transport: .http2, connection: accepted.connection,
                token: accepted.request.deviceToken, status: "accepted", statusCode: 200,
                content: .request(request, apnsID: accepted.apnsID))
            notification.fate = fate
            notification.uniqueID = accepted.uniqueID
            return notification
        }
    }
}

/// Hands a binary simulator's batches to the inbox, then to the recorder configured before.
struct BinaryInboxRecorder: NotificationRecorder {
    let inbox: PushInbox
    let next: (any NotificationRecorder)?

    func record(_ frames: [Frame], connection: Int) {
        inbox.add(frames: frames, connection: connection)
        next?.record(frames, connection: connection)
    }

    func flush() { next?.flush() }

    func connectionClosed(_ connection: Int) { next?.connectionClosed(connection) }
}

/// Hands an HTTP/2 simulator's batches to the inbox, then to the recorder configured before.
struct ProviderInboxRecorder: ProviderRecorder {
    let inbox: PushInbox
    let next: (any ProviderRecorder)?

    func record(_ requests: [AcceptedRequest]) {
        inbox.add(requests: requests)
        next?.record(requests)
    }

    func flush() { next?.flush() }
}
