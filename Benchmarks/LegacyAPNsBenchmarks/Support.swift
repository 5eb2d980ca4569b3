import Foundation

/// One measured figure.
struct BenchmarkResult {
    var name: String
    var count: Int
    var seconds: Double
    var unit: String
    var cpuSeconds: Double?
    var bytes: Int?
    var peakMemoryMB: Double?
    var note: String = ""

    var rate: Double { Double(count) / seconds }

    static let tableHeader =
        pad("benchmark", 44) + pad("count", 11) + pad("wall s", 9) + pad("rate", 18) + pad("MB/s", 9) + pad("CPU s", 8)
        + pad("peak MB", 9) + "note"

    var tableLine: String {
        Self.pad(name, 44) + Self.pad(String(count), 11) + Self.pad(String(format: "%.3f", seconds), 9)
            + Self.pad(Self.human(rate) + " \(unit)/s", 18)
            + Self.pad(bytes.map { String(format: "%.0f", Double($0) / seconds / 1e6) } ?? "-", 9)
            + Self.pad(cpuSeconds.map { String(format: "%.2f", $0) } ?? "-", 8)
            + Self.pad(peakMemoryMB.map { String(format: "%.1f", $0) } ?? "-", 9) + note
    }

    var jsonObject: [String: Any] {
        var object: [String: Any] = ["name": name, "count": count, "seconds": seconds, "unit": unit, "perSecond": rate]
        if let cpuSeconds { object["cpuSeconds"] = cpuSeconds }
        if let bytes {
            object["bytes"] = bytes
            object["bytesPerSecond"] = Double(bytes) / seconds
        }
        if let peakMemoryMB { object["peakMemoryMB"] = peakMemoryMB }
        if !note.isEmpty { object["note"] = note }
        return object
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    static func human(_ value: Double) -> String {
        if value >= 1e6 { return String(format: "%.2fM", value / 1e6) }
        if value >= 1e3 { return String(format: "%.1fk", value / 1e3) }
        return String(format: "%.0f", value)
    }
}

enum Clock {
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// CPU seconds (user + system) of this process so far.
    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    static func seconds(_ value: timeval) -> Double { Double(value.tv_sec) + Double(value.tv_usec) / 1e6 }

    /// CPU seconds of another process from /proc (utime + stime).
    static func cpu(of pid: Int32) -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (user + system) / ticks
    }
}

enum Machine {
    static var description: String {
        let cpus = ProcessInfo.processInfo.activeProcessorCount
        let memory = Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824
        var model = "unknown CPU"
        if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
            let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") })
        {
            model =
                line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? model
        }
        return
            "\(model), \(cpus) cores, \(String(format: "%.0f", memory)) GiB, \(ProcessInfo.processInfo.operatingSystemVersionString)"
    }
}

/// The package's root (where Fixtures/ and .build/ are), found from this executable's path.
enum Package {
    static var root: String {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for _ in 0..<6 {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) {
                return url.path
            }
        }
        return FileManager.default.currentDirectoryPath
    }

    static func certs(_ name: String) -> String { root + "/Fixtures/certs/" + name }

    /// The `legacy-push` binary built next to this one (same configuration).
    static var cli: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("legacy-push").path
    }

    /// The `tls-floor` program (Benchmarks/TLSFloor) built next to this one.
    static var floorClient: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("tls-floor").path
    }
}

/// A `legacy-push serve` child process on free ports.
final class ServeProcess {
    let process = Process()
    let gatewayPort: UInt16
    let feedbackPort: UInt16?
    /// The inbox's port, with `--inbox`.
    let inboxPort: UInt16?

    init(_ extra: [String]) throws {
        process.executableURL = URL(fileURLWithPath: Package.cli)
        process.arguments = ["serve", "--port", "0", "--feedback-port", "0", "--quiet"] + extra
        process.environment = ProcessInfo.processInfo.environment.merging(["LEGACY_PUSH_FIXTURES": Package.certs("")]) {
            $1
        }
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var text = ""
        var gateway: UInt16?
        var feedback: UInt16?
        var inbox: UInt16?
        let handle = out.fileHandleForReading
        while gateway == nil || (feedback == nil && !extra.contains("--no-feedback"))
            || (inbox == nil && extra.contains("--inbox"))
        {
            let data = handle.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
            for line in text.split(separator: "\n") {
                if line.hasPrefix("listening on ") { gateway = UInt16(line.split(separator: ":").last!) }
                if line.hasPrefix("feedback on ") { feedback = UInt16(line.split(separator: ":").last!) }
                if line.hasPrefix("inbox on http://") {
                    inbox = UInt16(line.split(separator: ":").last!.filter(\.isNumber))
                }
            }
        }
        guard let gateway else { throw NSError(domain: "serve did not start", code: 1) }
        gatewayPort = gateway
        feedbackPort = feedback
        inboxPort = inbox
    }

    var cpuSeconds: Double? { Clock.cpu(of: process.processIdentifier) }

    /// Its resident memory now (`VmRSS`), in MB.
    var residentMB: Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kilobytes / 1024
    }

    func stop() {
        process.interrupt()
        process.waitUntilExit()
    }
}
