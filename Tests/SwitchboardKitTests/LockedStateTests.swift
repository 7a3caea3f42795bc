import Foundation
import Testing
import SwitchboardKit

/// The SDK's own lock (it replaces `Mutex`, which needs iOS 18). Every coordinator, simulated
/// CallKit and adapter decision runs under one, so a lock that drops updates or deadlocks
/// breaks every call guarantee at once.
@Suite("LockedState: the SDK's lock", .timeLimit(.minutes(2)))
struct LockedStateTests {
    /// Two fields that every writer changes together: a reader that ever sees them differ saw
    /// a half-finished update.
    struct Pair: Sendable {
        var first = 0
        var second = 0
    }

    @Test func updatesFromManyThreadsAtOnceAreNeitherLostNorSeenHalfDone() async {
        let pair = LockedState(Pair())
        let tornReads = LockedState(0)
        let threads = 8, rounds = 20_000
        await onThreads(threads) { index in
            for _ in 0..<rounds {
                if index.isMultiple(of: 2) {
                    pair.withLock { pair in
                        pair.first += 1
                        pair.second += 1
                    }
                } else {
                    let consistent = pair.withLock { $0.first == $0.second }
                    if !consistent { tornReads.withLock { $0 += 1 } }
                    pair.withLock { pair in
                        pair.second += 1
                        pair.first += 1
                    }
                }
            }
        }
        let final = pair.withLock { $0 }
        #expect(final.first == threads * rounds)
        #expect(final.second == threads * rounds)
        #expect(tornReads.withLock { $0 } == 0)
    }

    @Test func theStateIsAValueCopiedOutAndChangedOnlyInPlace() {
        let log = LockedState([String]())
        log.withLock { $0.append("ring") }
        let snapshot = log.withLock { $0 }
        log.withLock { $0.append("answer") }
        #expect(snapshot == ["ring"])  // a copy taken out does not follow later changes
        var copy = log.withLock { $0 }
        copy.append("local only")
        #expect(log.withLock { $0 } == ["ring", "answer"])  // nor does changing a copy write back
        let count = log.withLock { log -> Int in
            log.removeFirst()
            return log.count
        }
        #expect(count == 1)
        #expect(log.withLock { $0 } == ["answer"])
    }

    struct Refused: Error, Equatable {
        let reason: String
    }

    @Test func aThrowingBodyKeepsItsChangesReleasesTheLockAndRethrowsItsOwnErrorType() {
        let attempts = LockedState(0)
        do throws(Refused) {
            try attempts.withLock { (attempts: inout Int) throws(Refused) in
                attempts += 1
                throw Refused(reason: "busy")
            }
            Issue.record("the body's error was swallowed")
        } catch {
            #expect(error == Refused(reason: "busy"))  // `error` is a `Refused`, not `any Error`
        }
        // The lock was released: on Linux taking it again on this thread would stop the process.
        #expect(attempts.withLock { $0 } == 1)
    }

    @Test func distinctLocksNestInOneOrderWithoutDeadlockWhileOthersTakeTheInnerOneAlone() async {
        // As a coordinator would: its own state outside, a shared ledger inside.
        let outer = LockedState(0)
        let inner = LockedState([Int: Int]())
        let threads = 6, rounds = 5_000
        await onThreads(threads) { index in
            for _ in 0..<rounds {
                if index < threads / 2 {
                    outer.withLock { outerCount in
                        outerCount += 1
                        inner.withLock { $0[index, default: 0] += 1 }
                    }
                } else {
                    inner.withLock { $0[index, default: 0] += 1 }
                }
            }
        }
        #expect(outer.withLock { $0 } == threads / 2 * rounds)
        let perThread = inner.withLock { $0 }
        #expect(perThread == Dictionary(uniqueKeysWithValues: (0..<threads).map { ($0, rounds) }))
    }

    @Test func takingTheLockAgainOnItsOwnThreadStopsTheProcessInsteadOfHanging() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            // A lock that let the thread wait for itself would hang this child for good; the
            // alarm ends it instead, without the message below, so the test fails, not hangs.
            alarm(60)
            let calls = LockedState(0)
            calls.withLock { _ in calls.withLock { $0 += 1 } }
        }
        #if !canImport(Darwin)  // on Apple platforms libplatform's abort message goes to the crash log
        let message = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(message.contains("LockedState.withLock re-entered on the thread that holds the lock"))
        #endif
    }

    /// Runs `body(index)` on `count` threads of their own at once and returns when all are done,
    /// without blocking a thread of Swift's cooperative pool meanwhile.
    private func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            let thread = Thread {
                body(index)
                group.leave()
            }
            thread.start()
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            group.notify(queue: .global()) { done.resume() }
        }
    }
}
