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

/// A gate that opens once: resumes its one parked waiter, whether the opening comes before or
/// after it parks.
private final class CancellationGate: Sendable {
    private let state = Mutex<(opened: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

    /// Suspends until the gate is opened (at once when it is); cancellation does not end the
    /// wait.
    func wait() async {
        await withCheckedContinuation { park($0) }
    }

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
    ///
    /// Every service runs in a child task of one task group, which runs in one task `run()`
    /// awaits, so none outlives `run()`. Each child runs its service beside a waiter on the service's own stop
    /// gate; opening the gate cancels that child's inner group, which is the service's request
    /// to stop, so services are stopped one at a time, in reverse order.
    public func run() async throws {
        let (events, sink) = AsyncStream<Event>.makeStream()
        // Subscribed before any service starts: from here on a stop signal stops the group.
        let subscription =
            try stopSignals.isEmpty ? nil : StopSignals.shared.subscribe(stopSignals) { sink.yield(.signal($0)) }
        defer { subscription.map(StopSignals.shared.unsubscribe) }

        // The group runs in a task of its own that `run()` awaits (so no service outlives it):
        // cancelling the caller is then a request to stop gracefully, in reverse order as for a
        // signal, not a cancellation of every service at once.
        let failure = await withTaskCancellationHandler {
            await Task { await runGroup(events, sink) }.value
        } onCancel: {
            sink.yield(.cancelled)
        }
        if let failure { throw failure }
    }

    /// Starts the services, waits for the first event, then stops them in reverse order; the
    /// first failure, if any.
    private func runGroup(_ events: AsyncStream<Event>, _ sink: AsyncStream<Event>.Continuation) async -> (any Error)? {
        let stops = services.map { _ in CancellationGate() }
        let ends = services.map { _ in CancellationGate() }
        // What each service's run handed back: its error, nil when it returned.
        let results = ServiceResults()
        return await withTaskGroup(of: Void.self, returning: (any Error)?.self) { group in
            for (index, entry) in services.enumerated() {
                group.addTask {
                    let error = await Self.run(entry.service, until: stops[index])
                    results.record(error, of: index)
                    ends[index].open()
                    sink.yield(.ended(index: index))
                }
            }

            didStart()

            var reason: StopReason?
            var failure: (any Error)?
            var ended: Int?
            // Ends at the first event.
            for await event in events {
                switch event {
                case .ended(let index):
                    ended = index
                    failure = results.error(of: index) ?? ServiceEndedEarly(name: services[index].name)
                    reason = .serviceEnded(name: services[index].name)
                case .signal(let number):
                    reason = .signal(number)
                case .cancelled:
                    reason = .cancelled
                }
                break
            }
            willStop(reason ?? .cancelled)

            // Stop in reverse order of start: a later service may still be using an earlier one.
            for index in services.indices.reversed() where index != ended {
                stops[index].open()
                await ends[index].wait()
                let error = results.error(of: index)
                if let error, failure == nil, !(error is CancellationError) { failure = error }
            }
            sink.finish()
            return failure
        }
    }

    /// Runs `service` until it ends or `stop` opens (then cancels it and waits for its end);
    /// its error, nil when it returned.
    private static func run(_ service: any Service, until stop: CancellationGate) async -> (any Error)? {
        await withTaskGroup(of: (any Error)??.self, returning: (any Error)?.self) { inner in
            inner.addTask {
                do {
                    try await service.run()
                    return .some(nil)
                } catch {
                    return .some(error)
                }
            }
            // The stop gate's waiter: nil when it opens (or when the service ended first and
            // the waiter was cancelled).
            inner.addTask {
                await withTaskCancellationHandler {
                    await stop.wait()
                } onCancel: {
                    stop.open()
                }
                return nil
            }
            var outcome: (any Error)?
            while let next = await inner.next() {
                // Either the service ended (the waiter is released) or the gate opened (the
                // service is asked to stop); either way the other child is cancelled.
                inner.cancelAll()
                if let ended = next { outcome = ended }
            }
            return outcome
        }
    }
}

/// What each service's run handed back, by the service's index.
private final class ServiceResults: Sendable {
    private let errors = Mutex<[Int: any Error]>([:])

    func record(_ error: (any Error)?, of index: Int) {
        errors.withLock { $0[index] = error }
    }

    func error(of index: Int) -> (any Error)? {
        errors.withLock { $0[index] }
    }
}
