import Foundation
import Synchronization

/// Prometheus metrics for the HTTP API: requests by route, method and status, a latency
/// histogram by route, and the open connection gauge (read when scraped).
public final class Metrics: Sendable {
    /// Upper bounds of the latency histogram buckets, in seconds.
    public static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
    ]

    private struct RequestKey: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    private struct Histogram {
        var buckets = [UInt64](repeating: 0, count: Metrics.latencyBuckets.count)
        var count: UInt64 = 0
        var sum: Double = 0

        mutating func record(_ seconds: Double) {
            // Buckets are cumulative: count the observation in every bucket whose bound it fits.
            if let first = Metrics.latencyBuckets.firstIndex(where: { seconds <= $0 }) {
                for index in first..<buckets.count { buckets[index] += 1 }
            }
            count += 1
            sum += seconds
        }
    }

    private struct State {
        var requests: [RequestKey: UInt64] = [:]
        var latency: [String: Histogram] = [:]
        /// Other counters: name → (help, labels text → value).
        var counters: [String: (help: String, values: [String: UInt64])] = [:]
    }

    private let state = Mutex(State())
    private let gauges = Mutex<[(name: String, help: String, read: @Sendable () -> Double)]>([])

    /// Creates an empty registry.
    public init() {}

    /// Registers a gauge read at scrape time.
    public func addGauge(_ name: String, help: String, read: @escaping @Sendable () -> Double) {
        gauges.withLock { $0.append((name, help, read)) }
    }

    /// Adds one to a labelled counter (created on first use).
    public func increment(_ name: String, help: String, labels: [(String, String)]) {
        add(1, to: name, help: help, labels: labels)
    }

    /// Adds `amount` to a labelled counter (created on first use).
    public func add(_ amount: UInt64, to name: String, help: String, labels: [(String, String)]) {
        let text = labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",")
        state.withLock { state in
            state.counters[name, default: (help, [:])].values[text, default: 0] += amount
        }
    }

    /// Records one finished request.
    /// Labels come only from fixed sets, so a stranger cannot grow the exposition: a method
    /// outside ``knownMethods`` is `other`, and past ``maximumRequestSeries`` series a new
    /// route and method pair is counted as route `other`, method `other`.
    public func recordRequest(route: String, method: String, status: Int, seconds: Double) {
        let method = Self.knownMethods.contains(method) ? method : "other"
        let status = (100...599).contains(status) ? status : 0
        state.withLock { state in
            var key = RequestKey(route: route, method: method, status: status)
            if state.requests[key] == nil, state.requests.count >= Self.maximumRequestSeries {
                key = RequestKey(route: "other", method: "other", status: status)
            }
            state.requests[key, default: 0] += 1
            let latencyRoute =
                state.latency[route] != nil || state.latency.count < Self.maximumRequestSeries ? route : "other"
            state.latency[latencyRoute, default: Histogram()].record(seconds)
        }
    }

    /// The methods counted by name; any other is `other`.
    public static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
    /// The most request series kept by their own labels.
    public static let maximumRequestSeries = 4096

    /// The Prometheus text exposition (format 0.0.4).
    public func render() -> String {
        let snapshot = state.withLock { $0 }
        var text =
            "# HELP switchboard_http_requests_total HTTP requests answered, by route pattern, method and status.\n"
        text += "# TYPE switchboard_http_requests_total counter\n"
        for (key, count) in snapshot.requests.sorted(by: {
            ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status)
        }) {
            text +=
                "switchboard_http_requests_total{route=\"\(Self.escape(key.route))\",method=\"\(Self.escape(key.method))\",status=\"\(key.status)\"} \(count)\n"
        }
        text +=
            "# HELP switchboard_http_request_duration_seconds Time from a complete request to its response, by route pattern.\n"
        text += "# TYPE switchboard_http_request_duration_seconds histogram\n"
        for (route, histogram) in snapshot.latency.sorted(by: { $0.key < $1.key }) {
            let label = "route=\"\(Self.escape(route))\""
            for (index, bound) in Self.latencyBuckets.enumerated() {
                text +=
                    "switchboard_http_request_duration_seconds_bucket{\(label),le=\"\(Self.format(bound))\"} \(histogram.buckets[index])\n"
            }
            text += "switchboard_http_request_duration_seconds_bucket{\(label),le=\"+Inf\"} \(histogram.count)\n"
            text += "switchboard_http_request_duration_seconds_sum{\(label)} \(Self.format(histogram.sum))\n"
            text += "switchboard_http_request_duration_seconds_count{\(label)} \(histogram.count)\n"
        }
        for (name, counter) in snapshot.counters.sorted(by: { $0.key < $1.key }) {
            text += "# HELP \(name) \(counter.help)\n# TYPE \(name) counter\n"
            for (labels, value) in counter.values.sorted(by: { $0.key < $1.key }) {
                text += labels.isEmpty ? "\(name) \(value)\n" : "\(name){\(labels)} \(value)\n"
            }
        }
        for gauge in gauges.withLock({ $0 }) {
            text +=
                "# HELP \(gauge.name) \(gauge.help)\n# TYPE \(gauge.name) gauge\n\(gauge.name) \(Self.format(gauge.read()))\n"
        }
        return text
    }

    private static func escape(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    private static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
