// Package.swift: .package(path: "../LegacyAPNs"), then depend on the "LegacyAPNs" product.
import Foundation
import LegacyAPNs

@main
struct Notify {
    static func main() async throws {
        let p12 = try Data(contentsOf: URL(fileURLWithPath: "Fixtures/certs/universal-legacy.p12"))
        let ca = try Data(contentsOf: URL(fileURLWithPath: "Fixtures/certs/ca.pem"))
        let identity = try ClientIdentity(pkcs12: Array(p12), passphrase: "secret")
        let client = try PushClient(
            configuration: .init(
                gateway: .custom(host: "127.0.0.1", port: 2195),
                tls: TLSConfiguration(identity: identity, trust: try .pem(Array(ca)))),
            events: { event in print(event) })

        let payload = try PayloadBuilder(alert: "Hello from Swift", badge: 1).build()
        let token = try DeviceToken(hexString: "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad")
        let report = await client.send([PushNotification(token: token, payload: payload, identifier: 1)])

        print("accepted \(report.accepted), rejected \(report.rejected.count), unconfirmed \(report.unconfirmed.count)")
        for rejection in report.rejected { print("rejected", rejection.identifier ?? 0, rejection.status) }
    }
}
