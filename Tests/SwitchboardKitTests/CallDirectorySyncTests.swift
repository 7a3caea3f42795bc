import Foundation
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting

/// The Call Directory on the phone (SPEC §11): the list kept from the server's whole and
/// incremental answers, the request each extension run gives the system (full, replacement
/// or incremental, ascending), the shared storage, and `CallDirectorySync` over a scripted
/// server, checked against a simulated system database that enforces CallKit's rules.
@Suite("Call Directory sync", .timeLimit(.minutes(2)))
struct CallDirectorySyncTests {
    typealias Entry = CallDirectoryIdentification

    static func contents(
        _ blocking: [Int64], _ labels: [Int64: String], user: String = "u1", version: Int64 = 1
    ) -> CallDirectoryContents {
        CallDirectoryContents(
            userID: user, version: version, blocking: blocking,
            identification: labels.map { Entry(number: $0.key, label: $0.value) })
    }

    /// Loads `load` into `directory` as the extension would, and completes the request.
    @discardableResult
    static func run(_ load: CallDirectoryLoad, in directory: SimulatedCallDirectory) -> [String] {
        let context = directory.beginRequest()
        load.apply(to: context)
        let faults = context.faults
        context.complete()
        return faults
    }

    // MARK: The list

    @Test func aWholeAnswerReplacesTheListAndAnIncrementalOneAppliesRemovalsThenAdditions() throws {
        let held = Self.contents(
            [18_005_550_003, 18_005_550_001], [18_005_550_009: "old", 18_005_550_005: "keep"], version: 4)
        #expect(held.blocking == [18_005_550_001, 18_005_550_003], "sorted on the way in")
        #expect(held.identification.map(\.number) == [18_005_550_005, 18_005_550_009])

        let whole = CallDirectoryList(
            version: 9, incremental: false, blocking: .init(add: [18_005_550_007]),
            identification: .init(add: [Entry(number: 18_005_550_002, label: "a")]))
        let replaced = try held.applying(whole, userID: "u2")
        #expect(replaced == Self.contents([18_005_550_007], [18_005_550_002: "a"], user: "u2", version: 9))

        let changes = CallDirectoryList(
            version: 6, incremental: true,
            blocking: .init(add: [18_005_550_000, 18_005_550_003], remove: [18_005_550_001, 18_005_550_004]),
            identification: .init(
                add: [Entry(number: 18_005_550_009, label: "new"), Entry(number: 18_005_550_008, label: "b")],
                remove: [18_005_550_009]))
        let applied = try held.applying(changes, userID: "u1")
        #expect(
            applied
                == Self.contents(
                    [18_005_550_000, 18_005_550_003],
                    [18_005_550_005: "keep", 18_005_550_008: "b", 18_005_550_009: "new"], version: 6),
            "removed, then added: a relabelled number is in both")

        #expect(throws: CallDirectorySyncError.self, "another user's changes") {
            try held.applying(changes, userID: "u2")
        }
        var behind = changes
        behind.version = 3
        #expect(throws: CallDirectorySyncError.self, "changes older than the list") {
            try held.applying(behind, userID: "u1")
        }
    }

    // MARK: The extension's request

    @Test func theSystemsQuestionAndWhatThePhoneKnowsItHoldsChooseTheForm() {
        let current = Self.contents([18_005_550_001, 18_005_550_002], [18_005_550_003: "c"])
        let full = CallDirectoryLoad.between(loaded: nil, current: current, systemIsIncremental: false)
        #expect(full.form == .full && full.blockingAdditions == current.blocking && full.blockingRemovals.isEmpty)
        let known = CallDirectoryLoad.between(loaded: current, current: current, systemIsIncremental: false)
        #expect(known.form == .full, "a system that holds nothing gets everything, whatever the phone recorded")

        let unknown = CallDirectoryLoad.between(loaded: nil, current: current, systemIsIncremental: true)
        #expect(unknown.form == .replacement && unknown.identificationAdditions == current.identification)

        let loaded = Self.contents([18_005_550_001, 18_005_550_005], [18_005_550_003: "old"])
        let incremental = CallDirectoryLoad.between(loaded: loaded, current: current, systemIsIncremental: true)
        #expect(incremental.form == .incremental)
        #expect(incremental.blockingRemovals == [18_005_550_005] && incremental.blockingAdditions == [18_005_550_002])
        #expect(
            incremental.identificationRemovals == [18_005_550_003]
                && incremental.identificationAdditions == [Entry(number: 18_005_550_003, label: "c")])
        #expect(
            CallDirectoryLoad.between(loaded: current, current: current, systemIsIncremental: true).changeCount == 0)

        // More changes than the list itself: remove everything and add the list instead.
        let many = Self.contents((0..<50).map { 18_005_560_000 + $0 }, [:])
        let small = Self.contents([18_005_550_001], [:])
        #expect(CallDirectoryLoad.between(loaded: many, current: small, systemIsIncremental: true).form == .replacement)
        #expect(CallDirectoryLoad.between(loaded: small, current: many, systemIsIncremental: true).form == .incremental)
    }

    /// Every pair of lists over four numbers (each absent, labelled "a" or "b", blocked or not):
    /// from what the system holds to any other list, the request is accepted by CallKit's rules
    /// and leaves exactly the new list, whichever form it takes.
    @Test func fromEveryListToEveryOtherTheRequestFollowsCallKitsRulesAndLandsExactly() {
        let numbers: [Int64] = [18_005_550_001, 18_005_550_002, 19_005_550_000, 447_700_900_123]
        let lists: [CallDirectoryContents] = (0..<(6 * 6 * 6 * 6)).map { code in
            var blocking: [Int64] = [], labels: [Int64: String] = [:]
            var rest = code
            for number in numbers {
                let state = rest % 6
                rest /= 6
                if state % 2 == 1 { blocking.append(number) }
                if state / 2 == 1 { labels[number] = "a" } else if state / 2 == 2 { labels[number] = "b" }
            }
            return Self.contents(blocking, labels)
        }
        var checked = 0, forms: [CallDirectoryLoad.Form: Int] = [:]
        for (index, from) in lists.enumerated() where index % 37 == 0 {
            for to in lists {
                let directory = SimulatedCallDirectory()
                Self.run(
                    CallDirectoryLoad.between(loaded: nil, current: from, systemIsIncremental: false), in: directory)
                let load = CallDirectoryLoad.between(loaded: from, current: to, systemIsIncremental: true)
                let faults = Self.run(load, in: directory)
                guard faults.isEmpty, directory.database.contents().hasSameEntries(as: to) else {
                    Issue.record("\(from) → \(to): \(faults), left \(directory.database)")
                    return
                }
                checked += 1
                forms[load.form, default: 0] += 1
            }
        }
        #expect(checked == (lists.count + 36) / 37 * lists.count)
        #expect(
            forms[.incremental, default: 0] > 0 && forms[.replacement, default: 0] > 0,
            "both forms were exercised: \(forms)")
    }

    @Test func entriesGoInAscendingOrderRemovalsFirst() {
        final class Log: CallDirectoryEntrySink {
            var lines: [String] = []
            func addBlockingEntry(withNextSequentialPhoneNumber phoneNumber: Int64) { lines.append("+b\(phoneNumber)") }
            func addIdentificationEntry(withNextSequentialPhoneNumber phoneNumber: Int64, label: String) {
                lines.append("+i\(phoneNumber)=\(label)")
            }
            func removeBlockingEntry(withPhoneNumber phoneNumber: Int64) { lines.append("-b\(phoneNumber)") }
            func removeIdentificationEntry(withPhoneNumber phoneNumber: Int64) { lines.append("-i\(phoneNumber)") }
            func removeAllBlockingEntries() { lines.append("-b*") }
            func removeAllIdentificationEntries() { lines.append("-i*") }
        }
        let loaded = Self.contents([3_000_000, 1_000_000], [2_000_000: "x"])
        let current = Self.contents([2_000_000, 1_000_000, 4_000_000], [2_000_000: "y", 1_500_000: "z"])
        let log = Log()
        CallDirectoryLoad.between(loaded: loaded, current: current, systemIsIncremental: true).apply(to: log)
        #expect(log.lines == ["-b3000000", "-i2000000", "+b2000000", "+b4000000", "+i1500000=z", "+i2000000=y"])
        let replacement = Log()
        CallDirectoryLoad.between(loaded: nil, current: current, systemIsIncremental: true).apply(to: replacement)
        #expect(
            replacement.lines == ["-b*", "-i*", "+b1000000", "+b2000000", "+b4000000", "+i1500000=z", "+i2000000=y"])
    }

    // MARK: Shared storage

    @Test func theFileStorageRoundTripsAndRefusesDamagedFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cd-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = FileCallDirectoryStorage(directory: directory)
        #expect(try storage.read(.current) == nil)
        let list = Self.contents(
            (0..<2_000).map { 18_005_550_000 + $0 * 3 },
            [18_005_550_001: "Acme support", 447_700_900_123: "two\nlines", 999_999_999_999_999: "ü 📞  spaced "],
            user: "user one", version: 42)
        try storage.write(list, to: .current)
        let read = try #require(try storage.read(.current))
        #expect(read.userID == "user one" && read.version == 42)
        #expect(read.blocking.count == 2_000 && read.blocking == list.blocking)
        #expect(
            read.identification.map(\.label) == ["Acme support", "two lines", "ü 📞  spaced "],
            "line breaks become spaces")
        #expect(try storage.read(.loaded) == nil, "the other slot is apart")

        let file = directory.appendingPathComponent("current.txt")
        let good = try Data(contentsOf: file)
        for damaged in [
            Data(good.dropLast(5)), Data("nonsense\n".utf8), Data(), good + Data("b 12\n".utf8),
            Data(
                String(decoding: good, as: UTF8.self).replacingOccurrences(
                    of: "b 18005550003\n", with: "b 18005550000\n"
                ).utf8),
        ] {
            try damaged.write(to: file)
            #expect(throws: CallDirectorySyncError.self) { try storage.read(.current) }
        }
        try storage.write(nil, to: .current)
        #expect(try storage.read(.current) == nil)
    }

    // MARK: Sync over a scripted server

    /// The server's list for each user and its history of versions, answering
    /// `GET /call-directory?since=` as SPEC §11 says (whole when `since` is unknown).
    final class ScriptedDirectoryServer: Sendable {
        private struct State {
            var versions: [String: [CallDirectoryContents]] = [:]
            var forgetBefore: Int64 = 0
        }
        private let state = Mutex(State())

        func change(_ user: String, blocking: [Int64], labels: [Int64: String]) {
            state.withLock {
                let next = ($0.versions[user]?.last?.version ?? 0) + 1
                $0.versions[user, default: [CallDirectoryContents.empty(userID: user)]].append(
                    CallDirectorySyncTests.contents(blocking, labels, user: user, version: next))
            }
        }

        /// Changes before `version` are no longer kept.
        func forget(before version: Int64) { state.withLock { $0.forgetBefore = version } }

        func current(_ user: String) -> CallDirectoryContents {
            state.withLock { $0.versions[user]?.last ?? .empty(userID: user) }
        }

        func answer(_ user: String, since: Int64?) -> CallDirectoryList {
            state.withLock { state in
                let history = state.versions[user] ?? [.empty(userID: user)]
                let now = history.last!
                if let since, since >= state.forgetBefore, let old = history.first(where: { $0.version == since }) {
                    let oldLabels = Dictionary(uniqueKeysWithValues: old.identification.map { ($0.number, $0.label) })
                    let newLabels = Dictionary(uniqueKeysWithValues: now.identification.map { ($0.number, $0.label) })
                    return CallDirectoryList(
                        version: now.version, incremental: true,
                        blocking: .init(
                            add: now.blocking.filter { !old.blocking.contains($0) },
                            remove: old.blocking.filter { !now.blocking.contains($0) }),
                        identification: .init(
                            add: now.identification.filter { oldLabels[$0.number] != $0.label },
                            remove: old.identification.filter { newLabels[$0.number] != $0.label }.map(\.number)))
                }
                return CallDirectoryList(
                    version: now.version, incremental: false, blocking: .init(add: now.blocking),
                    identification: .init(add: now.identification))
            }
        }
    }

    final class Phone: Sendable {
        let server = ScriptedDirectoryServer()
        let storage = InMemoryCallDirectoryStorage()
        let system = SimulatedCallDirectory()
        let reloads = Atomic<Int>(0)
        let failReloads = Atomic<Bool>(false)
        let transports = Mutex<[ScriptedTransport]>([])

        func sync(user: String) -> CallDirectorySync {
            let server = server
            let transport = ScriptedTransport { request in
                guard request.line.hasPrefix("GET /call-directory") else { return (404, errorBody("NOT_FOUND")) }
                let answer = server.answer(user, since: request.queryValue("since").map { Int64($0)! })
                return (200, String(decoding: try JSONEncoder().encode(answer), as: UTF8.self))
            }
            transports.withLock { $0.append(transport) }
            return CallDirectorySync(
                client: CallDirectoryClient(client: makeClient(transport)), userID: user, storage: storage
            ) { [self] in
                reloads.wrappingAdd(1, ordering: .relaxed)
                if failReloads.load(ordering: .relaxed) { throw CocoaLikeError.extensionDisabled }
            }
        }

        /// The extension's run: the request from the shared lists, completed (or not).
        @discardableResult
        func extensionRuns(completing: Bool = true) throws -> CallDirectoryLoad {
            let loader = CallDirectoryLoader(storage: storage)
            let context = system.beginRequest()
            let load = try loader.prepare(systemIsIncremental: context.isIncremental)
            load.apply(to: context)
            #expect(context.faults.isEmpty, "\(context.faults)")
            if completing, context.complete() { try loader.completed(load) }
            return load
        }

        var sinces: [String?] { transports.withLock { $0.flatMap(\.requests).map { $0.queryValue("since") } } }
    }

    enum CocoaLikeError: Error { case extensionDisabled }

    @Test func aPhoneFollowsItsUsersListWithWholeAndIncrementalReads() async throws {
        let phone = Phone()
        let sync = phone.sync(user: "u1")
        phone.server.change("u1", blocking: [18_005_550_002, 18_005_550_001], labels: [18_005_550_009: "Acme"])

        #expect(try await sync.refresh() == .reloaded(version: 1, blocking: 2, identification: 1))
        #expect(try phone.extensionRuns().form == .full)
        #expect(phone.system.database.contents().hasSameEntries(as: phone.server.current("u1")))

        #expect(try await sync.refresh() == .unchanged(version: 1), "nothing new: no reload")
        #expect(phone.reloads.load(ordering: .relaxed) == 1)

        phone.server.change(
            "u1", blocking: [18_005_550_001, 18_005_550_003],
            labels: [18_005_550_009: "Acme support", 18_005_550_004: "Bank"])
        #expect(try await sync.refresh() == .reloaded(version: 2, blocking: 2, identification: 2))
        let incremental = try phone.extensionRuns()
        #expect(incremental.form == .incremental && incremental.changeCount == 5)
        #expect(phone.system.database.contents().hasSameEntries(as: phone.server.current("u1")))
        #expect(phone.sinces == [nil, "1", "1"], "whole first, then the changes since the version held")

        // The server no longer keeps the changes since 2: the whole list, and still an incremental request.
        phone.server.change("u1", blocking: [], labels: [18_005_550_004: "Bank"])
        phone.server.forget(before: 3)
        _ = try await sync.refresh()
        #expect(try phone.extensionRuns().form == .incremental)
        #expect(phone.system.database.contents().hasSameEntries(as: phone.server.current("u1")))
        #expect(try sync.stored()?.version == 3)
    }

    @Test func aFailedReloadOrRequestIsRepairedByTheNextAndAResetSystemGetsEverything() async throws {
        let phone = Phone()
        let sync = phone.sync(user: "u1")
        phone.server.change("u1", blocking: [18_005_550_001], labels: [:])
        phone.failReloads.store(true, ordering: .relaxed)
        await #expect(throws: CallDirectorySyncError.self) { try await sync.refresh() }
        phone.failReloads.store(false, ordering: .relaxed)
        #expect(
            try await sync.refresh() == .reloaded(version: 1, blocking: 1, identification: 0),
            "the system never got it: reloaded again")
        try phone.extensionRuns()

        // A request that did not complete is sent again in full next time.
        phone.server.change("u1", blocking: [18_005_550_001, 18_005_550_002], labels: [18_005_550_003: "x"])
        _ = try await sync.refresh()
        let failed = try phone.extensionRuns(completing: false)
        #expect(try phone.extensionRuns() == failed)
        #expect(phone.system.database.contents().hasSameEntries(as: phone.server.current("u1")))

        // The system dropped the extension's data: a full request.
        phone.system.reset()
        #expect(try phone.extensionRuns().form == .full)
        #expect(phone.system.database.contents().hasSameEntries(as: phone.server.current("u1")))

        // The record of what the system holds is lost: everything is replaced, never doubled.
        try phone.storage.write(nil, to: .loaded)
        #expect(try phone.extensionRuns().form == .replacement)
        #expect(phone.system.database.contents().hasSameEntries(as: phone.server.current("u1")))
        #expect(phone.system.completedRequests == 4, "the one not completed does not count")
    }

    @Test func signingOutEmptiesTheSystemAndTheNextUserStartsWhole() async throws {
        let phone = Phone()
        phone.server.change("u1", blocking: [18_005_550_001], labels: [18_005_550_002: "one's"])
        phone.server.change("u2", blocking: [18_005_550_007], labels: [:])
        phone.server.change("u2", blocking: [18_005_550_008], labels: [:])
        let first = phone.sync(user: "u1")
        _ = try await first.refresh()
        try phone.extensionRuns()

        try await first.clear()
        #expect(try phone.extensionRuns().changeCount == 2)
        #expect(phone.system.database == SimulatedCallDirectory.Database())

        let second = phone.sync(user: "u2")
        #expect(try await second.refresh() == .reloaded(version: 2, blocking: 1, identification: 0))
        try phone.extensionRuns()
        #expect(phone.system.database.contents().hasSameEntries(as: phone.server.current("u2")))
        #expect(phone.sinces == [nil, nil], "u1's version means nothing on u2's list: read whole")
        #expect(try await second.refresh() == .unchanged(version: 2))
    }

    @Test func refreshesRunOneAtATimeAndTheFeedSaysWhenToRefresh() async throws {
        let phone = Phone()
        phone.server.change("u1", blocking: [18_005_550_001], labels: [:])
        let sync = phone.sync(user: "u1")
        try await withThrowingTaskGroup(of: CallDirectoryRefresh.self) { group in
            for _ in 0..<8 { group.addTask { try await sync.refresh() } }
            for try await _ in group {}
        }
        #expect(
            phone.sinces.first == .some(nil) && phone.sinces.dropFirst().allSatisfy { $0 == "1" }, "\(phone.sinces)")
        #expect(phone.reloads.load(ordering: .relaxed) == 8, "the system holds nothing until the extension runs")
        let event = Event(
            id: 1, kind: EventKind.callDirectoryChanged, conversationId: nil, groupId: nil, messageId: nil, callId: nil,
            createdAt: "2026-12-01T10:00:00.000Z")
        var other = event
        other.kind = EventKind.message
        #expect(CallDirectorySync.needsRefresh([other, event]) && !CallDirectorySync.needsRefresh([other]))
    }
}
