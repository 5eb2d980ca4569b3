import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// HAProxy (Debian's `haproxy`) in front of a fleet of bridges, from the fleet's one configuration
/// (`Fixtures/haproxy/fleet.cfg.in`): `mode tcp`, round robin, health checks every 200 ms, a
/// gateway and a feedback frontend on free loopback ports. Stopped (SIGKILL) by ``stop()`` or
/// when dropped.
public final class HAProxyFleet: Sendable {
    /// The balancer's gateway port (in front of the bridges' gateway ports).
    public let gateway: UInt16
    /// The balancer's feedback port (in front of the bridges' feedback ports).
    public let feedback: UInt16
    private let process: SpawnedProcess

    /// Renders `template` for `bridges` (gateway and feedback port of each), checks it with
    /// `haproxy -c`, starts HAProxy and waits (up to 10 s) until its gateway port takes a TCP
    /// connection. The rendered configuration is written into `folder`.
    public init(template: String, bridges: [(gateway: UInt16, feedback: UInt16)], folder: String) throws {
        guard
            let haproxy = ["/usr/sbin/haproxy", "/usr/bin/haproxy"].first(where: FileManager.default.isExecutableFile)
        else { throw ThrowawayPostgres.Failure("haproxy is not installed (Scripts/setup.sh --tests installs it)") }
        gateway = try freeLoopbackTCPPort()
        feedback = try freeLoopbackTCPPort()
        let servers = { (kind: String, port: ((gateway: UInt16, feedback: UInt16)) -> UInt16) in
            bridges.enumerated().map {
                "    server \(kind)\($0.offset) 127.0.0.1:\(port($0.element)) check inter 200ms fall 2 rise 1"
            }
            .joined(separator: "\n")
        }
        let configuration = try String(contentsOfFile: template, encoding: .utf8)
            .replacingOccurrences(of: "@GATEWAY_PORT@", with: "\(gateway)")
            .replacingOccurrences(of: "@FEEDBACK_PORT@", with: "\(feedback)")
            .replacingOccurrences(of: "@BRIDGES@", with: servers("b") { $0.gateway })
            .replacingOccurrences(of: "@FEEDBACKS@", with: servers("f") { $0.feedback })
        let path = folder + "/haproxy.cfg"
        try configuration.write(toFile: path, atomically: true, encoding: .utf8)
        let check = try SpawnedProcess(haproxy, ["-c", "-f", path])
        guard check.waitForExit(timeout: 20) == .exit(0) else {
            throw ThrowawayPostgres.Failure(
                "haproxy -c refused \(path): \(String(decoding: check.standardError, as: UTF8.self))")
        }
        process = try SpawnedProcess(haproxy, ["-db", "-f", path], stdout: .null, stderr: .null)
        for _ in 0..<500 where process.isRunning {
            if Self.accepts(gateway) { return }
            usleep(20_000)
        }
        process.send(SIGKILL)
        throw ThrowawayPostgres.Failure("haproxy did not start listening on 127.0.0.1:\(gateway)")
    }

    /// Whether a TCP connection to `port` on 127.0.0.1 is taken.
    private static func accepts(_ port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Kills HAProxy and waits for it.
    public func stop() {
        process.send(SIGKILL)
        _ = process.waitForExit(timeout: 20)
    }

    deinit { stop() }
}
