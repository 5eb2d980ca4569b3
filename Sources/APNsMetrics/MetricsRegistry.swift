import APNsCore
import Synchronization

/// A registry of metrics that renders them in the Prometheus text exposition format (version 0.0.4):
/// counters, gauges and histograms, each family with its `# HELP` and `# TYPE` lines, optionally
/// labelled, plus families sampled when rendered (from statistics a module keeps anyway).
///
/// Recording is cheap and lock-free: a ``Counter`` or ``Gauge`` is one atomic integer, a
/// ``Histogram`` one atomic per bucket plus its sum and count. Only creating a labelled series
/// (the first time a label value is seen, `labels(_:)` of a ``LabelledFamily``) takes a lock; callers on a
/// hot path keep the series they use. A family holds at most ``LabelledFamily/maximumSeries``
/// series: label values beyond that are counted under `other`, so a peer sending ever new reasons
/// cannot grow it without bound. Never use a device token or an identifier as a label value.
///
/// ```swift
/// let registry = MetricsRegistry()
/// let requests = registry.counter("legacy_push_upstream_requests_total", help: "...", labels: ["status"])
/// requests.labels("200").increment()
/// print(registry.exposition())
/// ```
public final class MetricsRegistry: Sendable {
    /// The `Content-Type` of ``exposition()``.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private let families = Mutex<[any RenderedFamily]>([])

    /// Creates an empty registry.
    public init() {}

    /// A counter without labels. `name` should end in `_total`.
    public func counter(_ name: String, help: String) -> Counter {
        counter(name, help: help, labels: []).labels()
    }

    /// A family of counters distinguished by `labels`.
    public func counter(_ name: String, help: String, labels: [String]) -> LabelledFamily<Counter> {
        add(LabelledFamily(name: name, help: help, kind: "counter", labels: labels) { Counter() })
    }

    /// A gauge without labels.
    public func gauge(_ name: String, help: String) -> Gauge {
        gauge(name, help: help, labels: []).labels()
    }

    /// A family of gauges distinguished by `labels`.
    public func gauge(_ name: String, help: String, labels: [String]) -> LabelledFamily<Gauge> {
        add(LabelledFamily(name: name, help: help, kind: "gauge", labels: labels) { Gauge() })
    }

    /// A histogram of durations with these bucket bounds in seconds (ascending; `+Inf` is added).
    /// `name` should end in `_seconds`.
    public func histogram(_ name: String, help: String, buckets: [Double]) -> Histogram {
        histogram(name, help: help, buckets: buckets, labels: []).labels()
    }

    /// A family of histograms distinguished by `labels`, each with these bucket bounds.
    public func histogram(
        _ name: String, help: String, buckets: [Double], labels: [String]
    ) -> LabelledFamily<Histogram> {
        let bounds = buckets.sorted()
        return add(
            LabelledFamily(name: name, help: help, kind: "histogram", labels: labels) { Histogram(bounds: bounds) })
    }

    /// A family whose values are read when the registry is rendered: `sample` returns each series'
    /// label values (in the order of `labels`) and value. For counts a module keeps anyway (its
    /// statistics): nothing is recorded twice, and the rendered value is the module's own.
    /// `kind` is `counter` or `gauge`.
    public func sampled(
        _ name: String, help: String, kind: SampledKind, labels: [String] = [],
        _ sample: @escaping @Sendable () -> [(labels: [String], value: Int)]
    ) {
        _ = add(SampledFamily(name: name, help: help, kind: kind.rawValue, labels: labels, sample: sample))
    }

    /// A family of one unlabelled value read when the registry is rendered (nil: no sample, e.g.
    /// when what it reads from is gone).
    public func sampled(
        _ name: String, help: String, kind: SampledKind, value: @escaping @Sendable () -> Int?
    ) {
        sampled(name, help: help, kind: kind) { value().map { [(labels: [], value: $0)] } ?? [] }
    }

    /// Unlabelled sampled families of one kind named `prefix + name`, each read from one snapshot
    /// taken when rendered (nil: no sample): for a module's statistics.
    public func sampled<Snapshot: Sendable>(
        _ kind: SampledKind, prefix: String = "", from snapshot: @escaping @Sendable () -> Snapshot?,
        _ table: [(name: String, help: String, read: @Sendable (Snapshot) -> Int)]
    ) {
        for (name, help, read) in table {
            sampled(prefix + name, help: help, kind: kind) { snapshot().map(read) }
        }
    }

    /// A sampled family with one label, a series per value, each read from one snapshot taken
    /// when rendered (nil: no samples).
    public func sampled<Snapshot: Sendable>(
        _ name: String, help: String, kind: SampledKind, label: String,
        from snapshot: @escaping @Sendable () -> Snapshot?,
        _ series: [(value: String, read: @Sendable (Snapshot) -> Int)]
    ) {
        sampled(name, help: help, kind: kind, labels: [label]) {
            guard let taken = snapshot() else { return [] }
            return series.map { (labels: [$0.value], value: $0.read(taken)) }
        }
    }

    /// What a sampled family is.
    public enum SampledKind: String, Sendable {
        /// Only ever grows (until the process restarts).
        case counter
        /// Goes up and down.
        case gauge
    }

    private func add<Family: RenderedFamily>(_ family: Family) -> Family {
        families.withLock { $0.append(family) }
        return family
    }

    /// Every family in the Prometheus text format, in the order they were created.
    public func exposition() -> String {
        let all = families.withLock { $0 }
        var text = ""
        text.reserveCapacity(all.count * 256)
        for family in all {
            text += "# HELP \(family.name) \(Self.escape(family.help))\n# TYPE \(family.name) \(family.kind)\n"
            family.render(into: &text)
        }
        return text
    }

    /// Backslashes and line breaks escaped (the text format's rule for `# HELP`), and double quotes
    /// too for a label value.
    static func escape(_ text: String, quotes: Bool = false) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\"" where quotes: escaped += "\\\""
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// `{a="x",b="y"}` (empty for no labels), with `extra` (a histogram's `le`) last.
    static func labelText(_ names: [String], _ values: [String], extra: (String, String)? = nil) -> String {
        var pairs = zip(names, values).map { "\($0)=\"\(escape($1, quotes: true))\"" }
        if let extra { pairs.append("\(extra.0)=\"\(extra.1)\"") }
        return pairs.isEmpty ? "" : "{" + pairs.joined(separator: ",") + "}"
    }
}

/// A family the registry renders.
protocol RenderedFamily: Sendable {
    var name: String { get }
    var help: String { get }
    var kind: String { get }
    func render(into text: inout String)
}

/// A series the registry renders under its family's name.
public protocol MetricSeries: AnyObject, Sendable {
    /// Appends this series' sample lines.
    func render(name: String, labelNames: [String], labelValues: [String], into text: inout String)
}

/// A value that only grows: one atomic integer.
public final class Counter: MetricSeries {
    private let count = Atomic<Int>(0)

    init() {}

    /// Adds `amount` (1 by default; never negative).
    @inline(__always)
    public func increment(by amount: Int = 1) {
        count.wrappingAdd(amount, ordering: .relaxed)
    }

    /// The current value.
    public var value: Int { count.load(ordering: .relaxed) }

    /// Appends this series' sample lines.
    public func render(name: String, labelNames: [String], labelValues: [String], into text: inout String) {
        text += "\(name)\(MetricsRegistry.labelText(labelNames, labelValues)) \(value)\n"
    }
}

/// A value that goes up and down: one atomic integer.
public final class Gauge: MetricSeries {
    private let current = Atomic<Int>(0)

    init() {}

    /// Sets the value.
    public func set(_ value: Int) { current.store(value, ordering: .relaxed) }

    /// Adds `amount` (negative to subtract).
    public func add(_ amount: Int) { current.wrappingAdd(amount, ordering: .relaxed) }

    /// The current value.
    public var value: Int { current.load(ordering: .relaxed) }

    /// Appends this series' sample lines.
    public func render(name: String, labelNames: [String], labelValues: [String], into text: inout String) {
        text += "\(name)\(MetricsRegistry.labelText(labelNames, labelValues)) \(value)\n"
    }
}

/// A histogram of durations: cumulative buckets (`le`), `_sum` in seconds and `_count`. Each
/// observation is three relaxed atomic additions (its bucket, the sum in nanoseconds, the count).
public final class Histogram: MetricSeries {
    /// The upper bounds in seconds (without `+Inf`).
    public let bounds: [Double]
    private let boundNanoseconds: [Int64]
    /// Observations per bucket (not cumulative), the last one above every bound.
    private let buckets: [Counter]
    private let sumNanoseconds = Atomic<Int>(0)
    private let count = Atomic<Int>(0)

    init(bounds: [Double]) {
        self.bounds = bounds
        self.boundNanoseconds = bounds.map { Int64(($0 * 1e9).rounded()) }
        self.buckets = (0...bounds.count).map { _ in Counter() }
    }

    /// Records one duration.
    public func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        var index = 0
        while index < boundNanoseconds.count, nanoseconds > boundNanoseconds[index] { index += 1 }
        buckets[index].increment()
        sumNanoseconds.wrappingAdd(Int(nanoseconds), ordering: .relaxed)
        count.wrappingAdd(1, ordering: .relaxed)
    }

    /// Observations so far.
    public var observations: Int { count.load(ordering: .relaxed) }

    /// Appends this series' sample lines.
    public func render(name: String, labelNames: [String], labelValues: [String], into text: inout String) {
        // The count first, then the buckets: a bucket total read after it can only be larger, so
        // the rendered histogram never has a bucket above its +Inf (which is written as the count).
        let total = count.load(ordering: .relaxed)
        var cumulative = 0
        for (index, bound) in bounds.enumerated() {
            cumulative += buckets[index].value
            let labels = MetricsRegistry.labelText(labelNames, labelValues, extra: ("le", "\(bound)"))
            text += "\(name)_bucket\(labels) \(Swift.min(cumulative, total))\n"
        }
        text += "\(name)_bucket\(MetricsRegistry.labelText(labelNames, labelValues, extra: ("le", "+Inf"))) \(total)\n"
        let sum = Double(sumNanoseconds.load(ordering: .relaxed)) / 1e9
        text += "\(name)_sum\(MetricsRegistry.labelText(labelNames, labelValues)) \(sum)\n"
        text += "\(name)_count\(MetricsRegistry.labelText(labelNames, labelValues)) \(total)\n"
    }
}

/// A family of series of one kind, one per combination of label values, created on first use.
public final class LabelledFamily<Series: MetricSeries>: RenderedFamily {
    /// Series a family holds at most; further label values are counted under `other`.
    public static var maximumSeries: Int { 256 }

    let name: String
    let help: String
    let kind: String
    /// The label names, in order.
    public let labelNames: [String]
    private let make: @Sendable () -> Series
    private let series = Mutex<[[String]: Series]>([:])

    init(name: String, help: String, kind: String, labels: [String], make: @escaping @Sendable () -> Series) {
        self.name = name
        self.help = help
        self.kind = kind
        self.labelNames = labels
        self.make = make
    }

    /// The series for these label values (as many as the family has labels), created on first use.
    /// Takes a lock: on a hot path, keep the series.
    public func labels(_ values: String...) -> Series {
        labels(values)
    }

    /// The series for these label values.
    public func labels(_ values: [String]) -> Series {
        precondition(values.count == labelNames.count, "\(name) has \(labelNames.count) labels")
        return series.withLock { series in
            if let known = series[values] { return known }
            let key = series.count < Self.maximumSeries ? values : values.map { _ in "other" }
            if let known = series[key] { return known }
            let created = make()
            series[key] = created
            return created
        }
    }

    func render(into text: inout String) {
        let all = series.withLock { $0 }.sorted { $0.key.lexicographicallyPrecedes($1.key) }
        for (values, series) in all {
            series.render(name: name, labelNames: labelNames, labelValues: values, into: &text)
        }
    }
}

/// A family read from a closure when rendered.
struct SampledFamily: RenderedFamily {
    let name: String
    let help: String
    let kind: String
    let labels: [String]
    let sample: @Sendable () -> [(labels: [String], value: Int)]

    func render(into text: inout String) {
        for (values, value) in sample() {
            text += "\(name)\(MetricsRegistry.labelText(labels, values)) \(value)\n"
        }
    }
}
