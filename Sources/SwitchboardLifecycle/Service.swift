import Foundation
import Synchronization

/// A long-running part of a process: the HTTP listener, the push provider's connections, the
/// background sweeps. `run()` does the work until the task running it is cancelled, which is
/// the request to stop gracefully (finish what is in flight, then return). A service that
/// returns or throws before it is asked to stop ends the whole group.
public protocol Service: Sendable {
    func run() async throws
}

/// Suspends until the current task is cancelled (at once when it already is).
public func waitUntilCancelled() async {
    let gate = CancellationGate()
    await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in gate.park(continuation) }
    } onCancel: {
        gate.open()
    }
}

/// Runs `work` to its end even when the calling task is cancelled (the graceful stop after a
/// service was asked to stop: a drain must get its whole grace), and returns its result.
public func runToCompletion<T: Sendable>(_ work: @escaping @Sendable () async -> T) async -> T {
    await Task { await work() }.value
}

/// Resumes the parked waiter once, whether the cancel comes before or after it parks.
private final class CancellationGate: Sendable {
    private let state = Mutex<(opened: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    func park(_ continuation: CheckedContinuation<Void, Never>) {
        let resumeNow = state.withLock { state -> Bool in
            if state.opened { return true }
            state.waiter = continuation
            return false
        }
        if resumeNow { continuation.resume() }
    }

    func open() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.opened = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
}

/// Runs services together, as swift-service-lifecycle's group does (only the part we need):
/// starts them in order, and stops them in reverse order, each one waited for before the
/// next is asked, when one of the stop signals arrives, when the task running the group is
/// cancelled, or when a service fails or returns on its own (that failure is rethrown).
///
/// ```swift
/// let group = ServiceGroup([("push", push), ("sweeps", sweeps), ("http", http)], stopSignals: [SIGTERM, SIGINT])
/// try await group.run()
/// ```
public struct ServiceGroup: Sendable {
    /// A service and the name its failures and stops are reported with.
    public typealias Entry = (name: String, service: any Service)

    /// Why the group stopped.
    public enum StopReason: Sendable, Equatable {
        case signal(Int32)
        case cancelled
        case serviceEnded(name: String)
    }

    public let services: [Entry]
    public let stopSignals: [Int32]
    /// Told once, when the stop signals are handled and every service has been started: from
    /// here on a stop signal stops the group gracefully (announce readiness here).
    public let didStart: @Sendable () -> Void
    /// Told once, before the services are stopped, why the group is stopping.
    public let willStop: @Sendable (StopReason) -> Void

    public init(
        _ services: [Entry], stopSignals: [Int32] = [], didStart: @escaping @Sendable () -> Void = {},
        willStop: @escaping @Sendable (StopReason) -> Void = { _ in }
    ) {
        self.services = services
        self.stopSignals = stopSignals
        self.didStart = didStart
        self.willStop = willStop
    }

    /// The stop signals could not be handled (no pipe for the handler could be made).
    public struct StopSignalsUnavailable: Error, Equatable, CustomStringConvertible {
        public let errno: Int32
        public var description: String { "cannot handle stop signals: pipe failed (errno \(errno))" }
    }

    private enum Event: Sendable {
        case ended(index: Int)
        case signal(Int32)
        case cancelled
    }

    /// A service that returned before it was asked to stop.
    public struct ServiceEndedEarly: Error, Equatable, CustomStringConvertible {
        public let name: String
        public init(name: String) { self.name = name }
        public var description: String { "service \(name) ended before it was asked to stop" }
    }

    /// Runs until stopped (see the type); throws the first service failure, if any.
    public func run() async throws {
        let (events, sink) = AsyncStream<Event>.makeStream()
        // Subscribed before any service starts: from here on a stop signal stops the group.
        let subscription = try stopSignals.isEmpty ? nil : StopSignals.shared.subscribe(stopSignals) { sink.yield(.signal($0)) }
        defer { subscription.map(StopSignals.shared.unsubscribe) }

        // Each task hands back its service's error (nil when it returned).
        var tasks: [Task<(any Error)?, Never>] = []
        for (index, entry) in services.enumerated() {
            tasks.append(Task {
                defer { sink.yield(.ended(index: index)) }
                do {
                    try await entry.service.run()
                    return nil
                } catch {
                    return error
                }
            })
        }

        didStart()

        var reason: StopReason?
        var failure: (any Error)?
        var ended: Set<Int> = []
        await withTaskCancellationHandler {
            // Ends at the first event; a cancelled caller's iteration ends at once too.
            for await event in events {
                switch event {
                case .ended(let index):
                    ended.insert(index)
                    failure = await tasks[index].value ?? ServiceEndedEarly(name: services[index].name)
                    reason = .serviceEnded(name: services[index].name)
                case .signal(let number):
                    reason = .signal(number)
                case .cancelled:
                    reason = .cancelled
                }
                break
            }
        } onCancel: {
            sink.yield(.cancelled)
        }
        willStop(reason ?? .cancelled)

        // Stop in reverse order of start: a later service may still be using an earlier one.
        for index in services.indices.reversed() where !ended.contains(index) {
            tasks[index].cancel()
            if let error = await tasks[index].value, failure == nil, !(error is CancellationError) { failure = error }
        }
        sink.finish()
        if let failure { throw failure }
    }
}
