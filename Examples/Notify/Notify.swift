// A package of your own depends on a LegacyAPNs checkout in its Package.swift; `package:` is the
// name of the checkout's folder, whatever it is called (here "legacy-apns", next to your package):
//     dependencies: [.package(path: "../legacy-apns")],
//     targets: [.executableTarget(name: "Notify", dependencies: [.product(name: "LegacyAPNs", package: "legacy-apns")])]
// Run it with the path to that checkout's Fixtures/certs and a gateway (`legacy-push serve` listens on 127.0.0.1:2195):
//     swift run Notify ../legacy-apns/Fixtures/certs 127.0.0.1:2195
// In the checkout itself: swift run Notify Fixtures/certs 127.0.0.1:2195
import Foundation  // for exit() and FileManager; LegacyAPNs itself does not import Foundation
import LegacyAPNs

@main
struct Notify {
    struct Order: Encodable {
        var id: Int
        var items: [String]
    }

    static func main() async {
        do {
            try await send()
        } catch {
            fail("\(error)")  // e.g. wrong passphrase for the .p12, or a malformed gateway address
        }
    }

    static func send() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        let certs = arguments.first ?? "Fixtures/certs"
        guard FileManager.default.fileExists(atPath: certs + "/ca.pem") else {
            fail("no test certificates in '\(certs)': give the path to a LegacyAPNs checkout's Fixtures/certs")
        }
        let gateway = try Endpoint(parsing: arguments.dropFirst().first ?? "127.0.0.1:2195", naming: "the gateway")

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

    /// One line on stderr and exit status 1: no backtrace for a mistake in the arguments.
    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("Notify: error: \(message)\n".utf8))
        exit(1)
    }
}
