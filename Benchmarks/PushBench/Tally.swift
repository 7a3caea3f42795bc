import Foundation
import Synchronization
import SwitchboardCrypto
import SwitchboardPush
import SwitchboardObservability
import SwitchboardPushCore

/// The pushes handed off without waiting (to held tokens), and what became of them.
final class HandedOff: Sendable {
    private let state = Mutex<(tasks: [Task<(APNsResult, Double), Never>], done: Bool)>(([], false))

    func send(provider: APNsProvider, token: String, headers: [(String, String)], payload: [UInt8]) {
        let task = Task {
            let start = ContinuousClock.now
            let result = await provider.send(
                deviceToken: token, environment: "production", headers: headers, payload: payload)
            return (result, (ContinuousClock.now - start).inMilliseconds)
        }
        state.withLock { $0.tasks.append(task) }
    }

    /// Waits for every handed-off push and tallies them.
    func wait() async -> Tally {
        let tasks = state.withLock { $0.tasks }
        var tally = Tally()
        for task in tasks {
            let (result, milliseconds) = await task.value
            tally.record(result, milliseconds: milliseconds)
        }
        return tally
    }
}

/// Hands out increasing indices to the senders.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    func take() -> Int {
        value.add(1, ordering: .relaxed).oldValue
    }
}

/// What one sender (or all of them, merged) saw.
struct Tally: Sendable {
    var latencies: [Double] = []
    var statuses: [String: Int] = [:]
    var failures: [String: Int] = [:]
    /// The first full detail seen per failure code (libcurl's message).
    var failureExamples: [String: String] = [:]
    var ok = 0

    /// A channel's answer; `delivered` as its reason table reads it.
    mutating func record(_ result: PushSendResult, delivered: Bool, milliseconds: Double) {
        switch result {
        case .response(let status, let reason, _):
            record(.response(status: status, reason: reason, apnsID: nil), milliseconds: milliseconds)
            if status == 200, !delivered { ok -= 1 }
        case .transportFailure(let detail): record(APNsResult.transportFailure(detail), milliseconds: milliseconds)
        }
    }

    mutating func record(_ result: APNsResult, milliseconds: Double) {
        latencies.append(milliseconds)
        switch result {
        case .response(let status, let reason, _):
            statuses[reason.map { "\(status) \($0)" } ?? String(status), default: 0] += 1
            if status == 200 { ok += 1 }
        case .transportFailure(let detail):
            // "timed_out", "connection_failed: …": keep the code, drop the per-request detail.
            let code = detail.split(separator: ":", maxSplits: 1).first.map(String.init) ?? detail
            failures[code, default: 0] += 1
            if failureExamples[code] == nil { failureExamples[code] = detail }
        }
    }

    mutating func merge(_ other: Tally) {
        latencies.append(contentsOf: other.latencies)
        statuses.merge(other.statuses, uniquingKeysWith: +)
        failures.merge(other.failures, uniquingKeysWith: +)
        failureExamples.merge(other.failureExamples) { first, _ in first }
        ok += other.ok
    }

    var summary: String {
        "statuses \(statuses), failures \(failures)"
    }
}

/// A flat JSON object written by hand (keys in insertion order, numbers and strings only).
struct JSONObject {
    private var members: [String] = []

    mutating func add(_ key: String, _ value: String) {
        members.append("\(Self.quoted(key)):\(Self.quoted(value))")
    }

    mutating func add(_ key: String, _ value: Int) {
        members.append("\(Self.quoted(key)):\(value)")
    }

    mutating func add(_ key: String, _ value: Double) {
        let text = value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
        members.append("\(Self.quoted(key)):\(text)")
    }

    mutating func add(_ key: String, _ value: [String: String]) {
        var inner = JSONObject()
        for (name, text) in value.sorted(by: { $0.key < $1.key }) { inner.add(name, text) }
        members.append("\(Self.quoted(key)):\(inner.text)")
    }

    mutating func add(_ key: String, _ value: [String: Double]) {
        var inner = JSONObject()
        for (name, number) in value.sorted(by: { $0.key < $1.key }) { inner.add(name, number) }
        members.append("\(Self.quoted(key)):\(inner.text)")
    }

    var text: String { "{" + members.joined(separator: ",") + "}" }

    private static func quoted(_ text: String) -> String { "\"" + JSONText.escape(text) + "\"" }
}

extension Duration {
    /// The duration in (fractional) seconds.
    var inSeconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) / 1e18
    }

    /// The duration in (fractional) milliseconds.
    var inMilliseconds: Double { inSeconds * 1000 }
}
