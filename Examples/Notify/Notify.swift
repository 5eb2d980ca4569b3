// A package of your own, next to a LegacyAPNs checkout, needs in its Package.swift:
//     dependencies: [.package(path: "../LegacyAPNs")],
//     targets: [.executableTarget(name: "Notify", dependencies: [.product(name: "LegacyAPNs", package: "LegacyAPNs")])]
// Run it with the test certificates' folder and a gateway (`legacy-push serve` listens on 127.0.0.1:2195):
//     swift run Notify ../LegacyAPNs/Fixtures/certs 127.0.0.1:2195
import Foundation  // for exit(); LegacyAPNs itself does not import Foundation
import LegacyAPNs

@main
struct Notify {
    struct Order: Encodable {
        var id: Int
        var items: [String]
    }

    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        let certs = arguments.first ?? "../LegacyAPNs/Fixtures/certs"
        let gateway = try Endpoint(parsing: arguments.dropFirst().first ?? "127.0.0.1:2195")

        let identity = try ClientIdentity(pkcs12File: certs + "/universal-legacy.p12", passphrase: "secret")
        let trust = try TLSConfiguration.Trust.pem(file: certs + "/ca.pem")
        let client = try PushClient(
            configuration: .init(gateway: Gateway(gateway), tls: TLSConfiguration(identity: identity, trust: trust)))

        let token = try DeviceToken(hexString: "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad")
        var notifications: [PushNotification] = []
        for i in 1...3 {
            var payload = PayloadBuilder(alert: "Message \(i)", badge: i)
            try payload.setCustomKey("order", encoding: Order(id: 1000 + i, items: ["tea"]))
            notifications.append(PushNotification(token: token, payload: try payload.build(), identifier: UInt32(i)))
        }
        let report = await client.send(notifications)

        print(report)  // 3 sent: 3 accepted, 0 rejected, 0 unconfirmed, 0 resent, 1 connection, 0.005 s
        for rejection in report.rejected {
            print("rejected #\(rejection.identifier ?? 0): status \(rejection.status)")
        }
        if let failure = report.failure {
            print("failed: \(failure.reason)")  // e.g. cannot connect to 127.0.0.1:2195: Connection refused
            exit(1)
        }
    }
}
