import Foundation
import Glibc
import Synchronization
import SwitchboardLifecycle
import SwitchboardTesting
import Testing

/// Records what services did, in order.
private final class Journal: Sendable {
    private let entries = Mutex<[String]>([])
    func add(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

/// Runs until cancelled, then takes a moment to stop (a yield), noting both.
private struct Recorder: Service {
    let name: String
    let journal: Journal
    func run() async throws {
        journal.add("start \(name)")
        await waitUntilCancelled()
        await Task.yield()
        journal.add("stop \(name)")
    }
}

private struct Failing: Service {
    struct Boom: Error, Equatable {}
    let journal: Journal
    let gate: @Sendable () async -> Void
    func run() async throws {
        journal.add("start failing")
        await gate()
        throw Boom()
    }
}

private struct Returning: Service {
    func run() async throws {}
}

// Serialized: two tests watch the one SIGWINCH handler thread, and a third subscribes to
// SIGWINCH meanwhile (run side by side, one saw the other's subscription keep the signal unblocked).
@Suite("Service group", .serialized, .timeLimit(.minutes(2)))
struct ServiceGroupTests {
    @Test func cancellingTheGroupStopsTheServicesInReverseOrderEachWaitedFor() async throws {
        let journal = Journal()
        let reasons = Mutex<[ServiceGroup.StopReason]>([])
        let group = ServiceGroup(
            [
                ("a", Recorder(name: "a", journal: journal)), ("b", Recorder(name: "b", journal: journal)),
                ("c", Recorder(name: "c", journal: journal)),
            ],
            willStop: { reason in reasons.withLock { $0.append(reason) } })
        let running = Task { try await group.run() }
        #expect(await eventually { journal.all.count == 3 })
        running.cancel()
        try await value(of: running)
        #expect(journal.all.suffix(3) == ["stop c", "stop b", "stop a"])
        #expect(Set(journal.all.prefix(3)) == ["start a", "start b", "start c"])
        #expect(reasons.withLock { $0 } == [.cancelled])
    }

    @Test func aFailingServiceStopsTheOthersAndItsErrorIsRethrown() async throws {
        let journal = Journal()
        let release = Mutex(false)
        let group = ServiceGroup([
            ("a", Recorder(name: "a", journal: journal)),
            ("failing", Failing(journal: journal, gate: { _ = await eventually { release.withLock { $0 } } })),
            ("c", Recorder(name: "c", journal: journal)),
        ])
        let running = Task { try await group.run() }
        #expect(await eventually { journal.all.count == 3 })
        release.withLock { $0 = true }
        await #expect(throws: Failing.Boom.self) { try await value(of: running) }
        #expect(journal.all.suffix(2) == ["stop c", "stop a"])
    }

    @Test func aServiceThatReturnsOnItsOwnEndsTheGroup() async throws {
        let journal = Journal()
        let group = ServiceGroup([("a", Recorder(name: "a", journal: journal)), ("quitter", Returning())])
        await #expect(throws: ServiceGroup.ServiceEndedEarly(name: "quitter")) { try await group.run() }
        #expect(journal.all.last == "stop a")
    }

    @Test func aStopSignalStopsTheGroupGracefully() async throws {
        let journal = Journal()
        let reasons = Mutex<[ServiceGroup.StopReason]>([])
        // SIGUSR2 stands in for SIGTERM: the group handles it while it runs.
        let group = ServiceGroup(
            [("a", Recorder(name: "a", journal: journal)), ("b", Recorder(name: "b", journal: journal))],
            stopSignals: [SIGUSR2],
            willStop: { reason in reasons.withLock { $0.append(reason) } })
        let running = Task { try await group.run() }
        #expect(await eventually { journal.all.count == 2 })
        // The handler is installed before the services start, so one signal is enough.
        kill(getpid(), SIGUSR2)
        try await value(of: running)
        #expect(reasons.withLock { $0 } == [.signal(SIGUSR2)])
        #expect(journal.all.suffix(2) == ["stop b", "stop a"])
    }

    /// What `serve` relies on: a stop signal sent the moment `didStart` runs (where it announces
    /// `listening`) is already handled and stops the group gracefully.
    @Test func aSignalSentFromDidStartIsAlreadyHandled() async throws {
        let journal = Journal()
        let reasons = Mutex<[ServiceGroup.StopReason]>([])
        let group = ServiceGroup(
            [("a", Recorder(name: "a", journal: journal))], stopSignals: [SIGUSR1],
            didStart: { kill(getpid(), SIGUSR1) },
            willStop: { reason in reasons.withLock { $0.append(reason) } })
        try await group.run()
        #expect(reasons.withLock { $0 } == [.signal(SIGUSR1)])
    }

    /// A synchronous tool's wait (proxy, emulator): a signal that comes before `wait()` is kept.
    /// SIGWINCH, whose default action is to be ignored, so no other test's signal is touched.
    @Test func aStopSignalWaitKeepsASignalThatCameBeforeItWaited() throws {
        let stop = try StopSignalWait([SIGWINCH])
        kill(getpid(), SIGWINCH)
        #expect(stop.wait() == SIGWINCH)
        #expect(stop.wait() == SIGWINCH)
    }

    /// The handler thread unblocks a handled signal for itself and, once nobody handles it,
    /// blocks it again if it was born blocking it (a host that collects it with sigwait gets
    /// it back). SIGWINCH: ignored by default, and no other test uses it.
    @Test func theHandlerThreadUnblocksAHandledSignalAndGivesItBack() async throws {
        func readerBlocksSIGWINCH() -> Bool? {
            guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else {
                return nil
            }
            for task in tasks {
                guard
                    (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.hasPrefix(
                        "sb-stop-signals") == true,
                    let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8),
                    let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigBlk:") }),
                    let mask = UInt64(line.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16)
                else { continue }
                return mask & (1 << UInt64(SIGWINCH - 1)) != 0
            }
            return nil
        }
        // Without a handler thread yet, the subscription starts it from this thread, whose mask
        // it inherits.
        var own = sigset_t()
        pthread_sigmask(SIG_BLOCK, nil, &own)
        let born = readerBlocksSIGWINCH() ?? (sigismember(&own, SIGWINCH) == 1)
        var stop: StopSignalWait? = try StopSignalWait([SIGWINCH])
        #expect(await eventually { readerBlocksSIGWINCH() == false })
        stop = nil
        _ = stop
        #expect(await eventually { readerBlocksSIGWINCH() == born })
    }

    @Test func waitUntilCancelledReturnsAtOnceForACancelledTask() async throws {
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await waitUntilCancelled()
            return true
        }
        #expect(try await value(of: task))
    }
}
