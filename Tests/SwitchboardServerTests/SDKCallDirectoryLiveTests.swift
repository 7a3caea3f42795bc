import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardTesting

/// The SDK's `CallDirectorySync` and `CallDirectoryLoader` against the real `switchboard`
/// binary over loopback, with an organisation's list kept through the admin API: the phone's
/// system database (simulated, CallKit's rules enforced) ends up holding exactly the merged
/// list, first whole, then by incremental requests after each `call_directory_changed`.
@Suite("SDK Call Directory against the binary", .serialized, .timeLimit(.minutes(3)))
struct SDKCallDirectoryLiveTests {
    @Test func aPhoneHoldsItsUsersAndOrganisationsListThroughEveryChange() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let adminKey = "admin-\(UUID().uuidString)"
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15", "SWITCHBOARD_ADMIN_KEY": adminKey])
        defer { _ = server.stop() }
        let admin = ["Authorization": "Bearer \(adminKey)"]
        let alice = try await liveRegister(server.address, "alice\(UInt32.random(in: 0...UInt32.max))")
        let client = SwitchboardClient(
            baseURL: URL(string: "http://\(server.address)")!, token: alice.token, transport: URLSessionTransport())

        let created = await fetch(
            server.address, "POST", "/admin/organizations", body: #"{"name":"Acme"}"#, headers: admin)
        #expect(created.status == 201, "\(created.body)")
        let organization = try #require(liveJSON(created.body)["id"] as? String)
        #expect(
            await fetch(
                server.address, "PUT", "/admin/organizations/\(organization)/members/\(alice.id)", headers: admin
            ).status == 204)
        let orgEntries =
            #"{"blocking":{"add":[18005550100,18005550101]},"identification":{"add":[{"number":18005550199,"label":"Acme support"}]}}"#
        #expect(
            await fetch(
                server.address, "PATCH", "/admin/organizations/\(organization)/call-directory", body: orgEntries,
                headers: admin
            ).status == 200)
        let directory = CallDirectoryClient(client: client)
        _ = try await directory.change(
            CallDirectoryChanges(
                blocking: .init(add: [447_700_900_001]),
                identification: .init(add: [.init(number: 18_005_550_199, label: "My contact at Acme")])))

        let storage = InMemoryCallDirectoryStorage()
        let system = SimulatedCallDirectory()
        let reloads = Atomic<Int>(0)
        let sync = CallDirectorySync(client: directory, userID: alice.id, storage: storage) {
            reloads.wrappingAdd(1, ordering: .relaxed)
        }
        @discardableResult
        func extensionRuns() throws -> CallDirectoryLoad {
            let loader = CallDirectoryLoader(storage: storage)
            let context = system.beginRequest()
            let load = try loader.prepare(systemIsIncremental: context.isIncremental)
            load.apply(to: context)
            #expect(context.faults.isEmpty, "\(context.faults)")
            if context.complete() { try loader.completed(load) }
            return load
        }
        func serverList() async throws -> CallDirectoryContents {
            let whole = try await directory.list()
            #expect(!whole.incremental)
            return try CallDirectoryContents.empty(userID: alice.id).applying(whole, userID: alice.id)
        }

        guard case .reloaded(_, blocking: 3, identification: 1) = try await sync.refresh() else {
            Issue.record("the first refresh reloads the merged list")
            return
        }
        #expect(try extensionRuns().form == .full)
        #expect(
            system.database.labels[18_005_550_199] == "My contact at Acme", "one's own label beats the organisation's")
        #expect(system.database.contents().hasSameEntries(as: try await serverList()))

        // The organisation changes: Alice's feed says so, and the phone catches up incrementally.
        let cursor = try await client.me().eventCursor
        let orgChange =
            #"{"blocking":{"remove":[18005550100]},"identification":{"add":[{"number":18005550150,"label":"Acme billing"}]}}"#
        #expect(
            await fetch(
                server.address, "PATCH", "/admin/organizations/\(organization)/call-directory", body: orgChange,
                headers: admin
            ).status == 200)
        let page = try await client.events(after: cursor, wait: 5)
        #expect(CallDirectorySync.needsRefresh(page.events))
        #expect(try await sync.refresh() != .unchanged(version: 0))
        let incremental = try extensionRuns()
        #expect(incremental.form == .incremental && incremental.changeCount == 2)
        #expect(system.database.contents().hasSameEntries(as: try await serverList()))

        // Leaving the organisation takes its entries away; her own stay.
        #expect(
            await fetch(
                server.address, "DELETE", "/admin/organizations/\(organization)/members/\(alice.id)", headers: admin
            ).status == 204)
        _ = try await sync.refresh()
        try extensionRuns()
        #expect(
            system.database.blocking == [447_700_900_001]
                && system.database.labels == [18_005_550_199: "My contact at Acme"])
        let version = try #require(try sync.stored()?.version)
        #expect(try await sync.refresh() == .unchanged(version: version))
        #expect(reloads.load(ordering: .relaxed) == 3)
        #expect(server.stop() == 0)
    }
}
