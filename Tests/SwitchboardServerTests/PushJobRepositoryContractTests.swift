import Foundation
import Testing
@testable import SwitchboardPush
@testable import SwitchboardServer
import SwitchboardTesting
import SwitchboardPushCore

/// ``PushJobRepository``'s contract, the same for every store.
@Suite("Repository contract: the push outbox", .timeLimit(.minutes(2)))
struct PushJobRepositoryContractTests {
    /// Far past the fixture's (manual) clock, so the application's own dispatcher, which runs
    /// beside these tests, never finds these jobs due.
    static let t0: Int64 = 1_900_000_000_000

    static func job(
        _ id: String, call: String, user: String, at created: Int64 = t0, state: String = "pending",
        reason: String? = nil
    ) -> NewPushJob {
        NewPushJob(
            id: id, callID: call, userID: user, deviceID: "device-\(id)", provider: "apns", channel: "ios-voip",
            token: "token-\(id)", environment: "sandbox",
            payload: #"{"aps":{}}"#, headers: #"[["apns-push-type","voip"],["apns-priority","10"]]"#, state: state,
            reason: reason,
            createdAtMS: created, expiresAtMS: created + 45_000)
    }

    struct Rig {
        let fixture: RepositoryFixture
        let user: String
        let call: String
        var store: ServerStore { fixture.store }

        init(_ kind: StoreKind) async throws {
            fixture = try kind.fixture()
            // The application's own dispatcher has released old claims and gone to sleep on
            // the manual clock: it cannot release the claims these tests make.
            let clock = fixture.world.clock
            guard await eventually({ clock.sleeperCount(of: PushDispatcher.loopName) >= 1 }) else {
                throw TestFailure("the dispatcher did not start")
            }
            let caller = try await fixture.account("caller")
            user = caller.userID
            call = try await fixture.call(from: caller)
        }

        @discardableResult
        func write<T: Sendable>(_ body: @escaping @Sendable (any PushJobRepository) throws -> T) async throws -> T {
            try await store.write { try body($0.pushJobs) }
        }

        func outlook(at now: Int64) async throws -> PushQueueOutlook {
            try await store.snapshot { try $0.pushJobs.outlook(at: now) }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aJobIsDueClaimedForItsLeaseAndDueAgainWhenTheLeaseLapses(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        defer { rig.fixture.close() }
        let (call, user) = (rig.call, rig.user)
        try await rig.write { try $0.enqueue(Self.job("j1", call: call, user: user)) }
        #expect(try await rig.outlook(at: Self.t0) == PushQueueOutlook(pending: 1, due: 1, nextDueMS: Self.t0))
        #expect(try await rig.outlook(at: Self.t0 - 1).due == 0, "not due before its time")
        let claimed = try await rig.write {
            try $0.claim(dueAt: Self.t0, limit: 10, leaseUntilMS: Self.t0 + 5_000, by: "a", skipping: [])
        }
        let job = try #require(claimed.first)
        #expect(claimed.count == 1)
        #expect(
            job.id == "j1" && job.callID == call && job.userID == user && job.token == "token-j1"
                && job.environment == "sandbox")
        #expect(job.payload == Array(#"{"aps":{}}"#.utf8) && job.attempts == 0)
        #expect(job.headers.map { "\($0.0)=\($0.1)" } == ["apns-push-type=voip", "apns-priority=10"])
        #expect(job.expiresAt == CallStore.date(Self.t0 + 45_000))
        // Leased: neither due nor claimable until the lease lapses.
        #expect(
            try await rig.outlook(at: Self.t0 + 1_000)
                == PushQueueOutlook(pending: 1, due: 0, nextDueMS: Self.t0 + 5_001))
        #expect(
            try await rig.write {
                try $0.claim(dueAt: Self.t0 + 1_000, limit: 10, leaseUntilMS: Self.t0 + 6_000, by: "a", skipping: [])
            }.isEmpty)
        #expect(
            try await rig.write {
                try $0.claim(dueAt: Self.t0 + 5_001, limit: 10, leaseUntilMS: Self.t0 + 9_000, by: "a", skipping: [])
            }.count == 1)
        // Released claims (a new process, the only dispatcher) are due at once.
        try await rig.write { try $0.releaseClaims() }
        #expect(try await rig.outlook(at: Self.t0 + 5_002).due == 1)
        #expect(
            try await rig.write {
                try $0.claim(
                    dueAt: Self.t0 + 5_002, limit: 10, leaseUntilMS: Self.t0 + 9_000, by: "a", skipping: ["j1"])
            }.isEmpty,
            "a send still running keeps its job")
    }

    /// Two instances: a lease keeps the other off the job until it runs out; then the other
    /// takes it over, and the first one's late outcome is not recorded.
    @Test(arguments: StoreKind.allCases)
    func aLeaseIsTakenOverOnlyWhenItRunsOutAndOnlyItsHolderFinishesTheJob(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        defer { rig.fixture.close() }
        let (call, user) = (rig.call, rig.user)
        try await rig.write { try $0.enqueue(Self.job("j1", call: call, user: user)) }
        #expect(
            try await rig.write {
                try $0.claim(dueAt: Self.t0, limit: 10, leaseUntilMS: Self.t0 + 5_000, by: "a", skipping: [])
            }.count == 1)
        #expect(
            try await rig.write {
                try $0.claim(dueAt: Self.t0 + 4_999, limit: 10, leaseUntilMS: Self.t0 + 9_000, by: "b", skipping: [])
            }.isEmpty)
        // "a" crashed (or hangs): its lease runs out and "b" takes the job over.
        #expect(
            try await rig.write {
                try $0.claim(dueAt: Self.t0 + 5_001, limit: 10, leaseUntilMS: Self.t0 + 9_000, by: "b", skipping: [])
            }.count == 1)
        #expect(
            try await rig.write {
                try $0.finish(
                    "j1", .delivered, reason: nil, lastError: nil, attempted: true, at: Self.t0 + 5_100, by: "a")
            } == false)
        #expect(
            try await rig.write {
                try $0.reschedule("j1", nextAttemptAtMS: Self.t0 + 6_000, reason: "late", attempted: true, by: "a")
            }
                == false)
        #expect(
            try await rig.outlook(at: Self.t0 + 5_200)
                == PushQueueOutlook(pending: 1, due: 0, nextDueMS: Self.t0 + 9_001), "still b's")
        #expect(
            try await rig.write {
                try $0.finish(
                    "j1", .delivered, reason: nil, lastError: nil, attempted: true, at: Self.t0 + 5_300, by: "b")
            })
        #expect(try await rig.outlook(at: Self.t0 + 9_500) == PushQueueOutlook(pending: 0, due: 0, nextDueMS: nil))
    }

    @Test(arguments: StoreKind.allCases)
    func claimsTakeTheOldestDueFirstUpToTheLimit(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        defer { rig.fixture.close() }
        let (call, user) = (rig.call, rig.user)
        try await rig.write { jobs in
            for (index, id) in ["j3", "j1", "j2"].enumerated() {
                try jobs.enqueue(Self.job(id, call: call, user: user, at: Self.t0 - Int64([300, 100, 200][index])))
            }
        }
        let first = try await rig.write {
            try $0.claim(dueAt: Self.t0, limit: 2, leaseUntilMS: Self.t0 + 5_000, by: "a", skipping: [])
        }
        #expect(first.map(\.id) == ["j3", "j2"])
        #expect(try await rig.outlook(at: Self.t0) == PushQueueOutlook(pending: 3, due: 1, nextDueMS: Self.t0 - 100))
        #expect(
            try await rig.write {
                try $0.claim(dueAt: Self.t0, limit: 0, leaseUntilMS: Self.t0 + 5_000, by: "a", skipping: [])
            }.isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func aRetryIsRescheduledAndAFinishedJobStaysFinished(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        defer { rig.fixture.close() }
        let (call, user) = (rig.call, rig.user)
        try await rig.write { try $0.enqueue(Self.job("j1", call: call, user: user)) }
        _ = try await rig.write {
            try $0.claim(dueAt: Self.t0, limit: 1, leaseUntilMS: Self.t0 + 5_000, by: "a", skipping: [])
        }
        try await rig.write {
            try $0.reschedule("j1", nextAttemptAtMS: Self.t0 + 2_000, reason: "timed out", attempted: true, by: "a")
        }
        #expect(
            try await rig.outlook(at: Self.t0 + 1_000)
                == PushQueueOutlook(pending: 1, due: 0, nextDueMS: Self.t0 + 2_000), "its claim ended")
        let again = try await rig.write {
            try $0.claim(dueAt: Self.t0 + 2_000, limit: 1, leaseUntilMS: Self.t0 + 7_000, by: "a", skipping: [])
        }
        #expect(again.first?.attempts == 1)
        // Ends without an error of its own: the retried attempt's error stays.
        try await rig.write {
            try $0.finish(
                "j1", .expired, reason: "ring_window_passed", lastError: nil, attempted: false, at: Self.t0 + 3_000,
                by: "a")
        }
        try await rig.write {
            try $0.finish("j1", .delivered, reason: nil, lastError: nil, attempted: true, at: Self.t0 + 4_000, by: "a")
        }
        #expect(try await rig.outlook(at: Self.t0 + 9_000) == PushQueueOutlook(pending: 0, due: 0, nextDueMS: nil))
        let report = try await rig.store.snapshot { try $0.pushJobs.report(failures: 20) }
        #expect(report.pending == 0 && report.oldestPendingCreatedMS == nil)
        #expect(
            report.outcomes == [
                PushQueueReport.Outcomes(
                    provider: "apns", channel: "ios-voip", state: "expired", reason: "ring_window_passed", count: 1)
            ])
        let failure = try #require(report.newestFailures.first)
        #expect(report.newestFailures.count == 1)
        #expect(
            failure.id == "j1" && failure.state == "expired" && failure.lastError == "timed out"
                && failure.attempts == 1)
        #expect(failure.finishedAtMS == Self.t0 + 3_000 && failure.token == "token-j1")
    }

    @Test(arguments: StoreKind.allCases)
    func theReportCountsOutcomesAndListsOnlyUndeliveredJobsWithAnError(kind: StoreKind) async throws {
        let rig = try await Rig(kind)
        defer { rig.fixture.close() }
        let (call, user) = (rig.call, rig.user)
        try await rig.write { jobs in
            try jobs.enqueue(
                Self.job(
                    "built-wrong", call: call, user: user, at: Self.t0, state: "failed", reason: "payload too large"))
            for id in ["a", "b", "c", "d"] { try jobs.enqueue(Self.job(id, call: call, user: user, at: Self.t0 + 10)) }
            try jobs.enqueue(Self.job("waiting", call: call, user: user, at: Self.t0 + 20))
        }
        try await rig.write { jobs in
            try jobs.finish("a", .delivered, reason: nil, lastError: nil, attempted: true, at: Self.t0 + 100, by: "a")
            try jobs.finish("b", .delivered, reason: nil, lastError: nil, attempted: true, at: Self.t0 + 101, by: "a")
            try jobs.finish(
                "c", .failed, reason: "BadDeviceToken", lastError: "BadDeviceToken", attempted: true, at: Self.t0 + 102,
                by: "a")
            try jobs.finish(
                "d", .dropped, reason: "call_not_ringing", lastError: nil, attempted: false, at: Self.t0 + 103, by: "a")
        }
        let report = try await rig.store.snapshot { try $0.pushJobs.report(failures: 20) }
        #expect(report.pending == 1 && report.oldestPendingCreatedMS == Self.t0 + 20)
        #expect(report.outcomes.count == 4)
        #expect(report.outcomes.first { $0.state == "delivered" }?.count == 2)
        #expect(report.outcomes.first { $0.state == "failed" && $0.reason == "payload too large" }?.count == 1)
        // A job built wrong has no attempt error; only "c" failed after an error.
        #expect(report.newestFailures.map(\.id) == ["c"])
        #expect(try await rig.store.snapshot { try $0.pushJobs.report(failures: 0) }.newestFailures.isEmpty)
        #expect(
            try await rig.outlook(at: Self.t0 + 20) == PushQueueOutlook(pending: 1, due: 1, nextDueMS: Self.t0 + 20))
    }
}
