import Foundation
import SwitchboardHTTP
import SwitchboardNetSim
import SwitchboardTesting
import SwitchboardWire
import Testing

@testable import SwitchboardServer

/// Call Directory lists (SPEC §11) over the in-process application on the manual clock, on the
/// store the run names (`make test` runs it on SQLite and on PostgreSQL).
@Suite("Call Directory", .timeLimit(.minutes(3)))
struct CallDirectoryTests {
    static let adminKey = "call-directory-admin-key"
    static let admin: HTTPHeaders = ["Host": "t", "Authorization": "Bearer \(adminKey)"]

    struct Fixture {
        let world: CallWorld
        let olivia: CallWorld.Person, max: CallWorld.Person

        init() async throws {
            var configuration = ServerConfiguration()
            configuration.adminKey = CallDirectoryTests.adminKey
            world = try CallWorld(configuration: configuration)
            olivia = try await world.person("olivia")
            max = try await world.person("max")
        }

        func request(
            _ person: CallWorld.Person, _ method: String, _ path: String, _ body: String = ""
        ) async -> HTTPResponse {
            await world.app.request(method, path, headers: person.headers, body: body)
        }

        func admin(_ method: String, _ path: String, _ body: String = "") async -> HTTPResponse {
            await world.app.request(method, path, headers: CallDirectoryTests.admin, body: body)
        }

        @discardableResult
        func change(_ person: CallWorld.Person, _ body: String) async throws -> Int64 {
            let response = await request(person, "PATCH", "/call-directory", body)
            try #require(response.status == 200, "change: \(response.status) \(response.text)")
            return try JSONDecoder().decode(CallDirectoryVersion.self, from: Data(response.bodyBytes)).version
        }

        func list(_ person: CallWorld.Person, since: Int64? = nil) async throws -> CallDirectoryList {
            let response = await request(person, "GET", "/call-directory" + (since.map { "?since=\($0)" } ?? ""))
            try #require(response.status == 200, "list: \(response.status) \(response.text)")
            return try JSONDecoder().decode(CallDirectoryList.self, from: Data(response.bodyBytes))
        }

        func organization(_ name: String) async throws -> String {
            let response = await admin("POST", "/admin/organizations", #"{"name":"\#(name)"}"#)
            try #require(response.status == 201, "create: \(response.text)")
            return try JSONDecoder().decode(Organization.self, from: Data(response.bodyBytes)).id
        }

        func changeOrganization(_ id: String, _ body: String) async throws -> Organization {
            let response = await admin("PATCH", "/admin/organizations/\(id)/call-directory", body)
            try #require(response.status == 200, "org change: \(response.status) \(response.text)")
            return try JSONDecoder().decode(Organization.self, from: Data(response.bodyBytes))
        }

        func directoryEvents(_ person: CallWorld.Person, after: Int64) async throws -> Int {
            try await world.events(of: person, after: after).filter { $0.kind == EventKind.callDirectoryChanged }.count
        }

        func cursor(_ person: CallWorld.Person) async throws -> Int64 {
            try await world.events(of: person).last?.id ?? 0
        }

        func close() { world.close() }
    }

    // MARK: One's own list

    @Test func theWholeListIsSortedAscendingAndAnIncrementalAnswerNamesOnlyTheNetChanges() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let olivia = fixture.olivia
        #expect(
            try await fixture.list(olivia)
                == CallDirectoryList(version: 0, incremental: false, blocking: .init(), identification: .init()))
        let first = try await fixture.change(
            olivia,
            """
            {"blocking":{"add":[447700900123,18005550100,33123456789,18005550100]},
             "identification":{"add":[{"number":18005550199,"label":"  Acme support "},{"number":14155550123,"label":"Dentist"},{"number":4930123456,"label":"Office"}]}}
            """)
        #expect(first == 1, "one version per request")
        let whole = try await fixture.list(olivia)
        #expect(whole.version == 1 && !whole.incremental)
        #expect(whole.blocking.add == [18005550100, 33123456789, 447700900123] && whole.blocking.remove.isEmpty)
        #expect(whole.identification.add.map(\.number) == [4930123456, 14155550123, 18005550199])
        #expect(whole.identification.add.last?.label == "Acme support", "labels are trimmed")
        #expect(
            try await fixture.list(olivia, since: 1)
                == CallDirectoryList(version: 1, incremental: true, blocking: .init(), identification: .init()))

        // Second change: unblock one, block one, relabel one, drop one label, add and remove a
        // number within the later versions (never mentioned to a phone at version 1).
        try await fixture.change(
            olivia,
            #"{"blocking":{"add":[12125550000],"remove":[33123456789]},"identification":{"add":[{"number":18005550199,"label":"Acme"}],"remove":[4930123456]}}"#
        )
        try await fixture.change(olivia, #"{"blocking":{"add":[19995550000]}}"#)
        let last = try await fixture.change(olivia, #"{"blocking":{"remove":[19995550000]}}"#)
        #expect(last == 4)
        let since1 = try await fixture.list(olivia, since: 1)
        #expect(since1.version == 4 && since1.incremental)
        #expect(since1.blocking == CallDirectoryBlockingChanges(add: [12125550000], remove: [33123456789]))
        #expect(
            since1.identification.remove == [4930123456, 18005550199], "a relabelled number is removed and added again")
        #expect(since1.identification.add == [CallDirectoryIdentification(number: 18005550199, label: "Acme")])
        let since3 = try await fixture.list(olivia, since: 3)
        #expect(since3.blocking == CallDirectoryBlockingChanges(add: [], remove: [19995550000]))
        // A change that changes nothing makes no version.
        #expect(try await fixture.change(olivia, #"{"blocking":{"add":[12125550000],"remove":[33123456789]}}"#) == 4)
        // Own entries; another user's list is untouched.
        let own = await fixture.request(olivia, "GET", "/call-directory/own")
        let entries = try JSONDecoder().decode(CallDirectoryOwnEntries.self, from: Data(own.bodyBytes))
        #expect(entries.blocking == [12125550000, 18005550100, 447700900123])
        #expect(try await fixture.list(fixture.max).version == 0)
    }

    @Test func aVersionUnknownOrNoLongerKeptGetsTheWholeList() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let olivia = fixture.olivia
        try await fixture.change(olivia, #"{"blocking":{"add":[18005550100]}}"#)
        try await fixture.change(olivia, #"{"blocking":{"add":[18005550101]}}"#)
        // From the future: the whole list.
        let future = try await fixture.list(olivia, since: 99)
        #expect(!future.incremental && future.version == 2 && future.blocking.add == [18005550100, 18005550101])
        // After the retention window the changes are gone: the whole list, then increments again.
        fixture.world.clock.advance(seconds: CallDirectoryService.retentionSeconds + 60)
        #expect(try await fixture.world.app.application.callDirectory.prune() == 2)
        #expect(try await !fixture.list(olivia, since: 1).incremental)
        #expect(try await fixture.list(olivia, since: 2).incremental, "the current version is still known")
        try await fixture.change(olivia, #"{"blocking":{"remove":[18005550100]}}"#)
        let since2 = try await fixture.list(olivia, since: 2)
        #expect(since2.incremental && since2.blocking.remove == [18005550100])
        #expect(try await !fixture.list(olivia, since: 1).incremental)
    }

    @Test func everyChangeOfTheListTellsItsOwnerByAnEvent() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let cursor = try await fixture.cursor(fixture.olivia)
        try await fixture.change(fixture.olivia, #"{"blocking":{"add":[18005550100]}}"#)
        try await fixture.change(fixture.olivia, #"{"blocking":{"add":[18005550100]}}"#)  // nothing new: no event
        #expect(try await fixture.directoryEvents(fixture.olivia, after: cursor) == 1)
        #expect(try await fixture.directoryEvents(fixture.max, after: 0) == 0)
    }

    @Test func badInputIsA400NamingTheField() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let cases: [(String, String?)] = [
            (#"{"blocking":{"add":[999999]}}"#, "blocking.add[0]"),
            (#"{"blocking":{"add":[18005550100, 1000000000000000]}}"#, "blocking.add[1]"),
            (#"{"blocking":{"add":[-18005550100]}}"#, "blocking.add[0]"),
            (#"{"blocking":{"remove":[0]}}"#, "blocking.remove[0]"),
            (#"{"blocking":{"add":["+18005550100"]}}"#, "blocking.add[0]"),
            (#"{"blocking":{"add":[18005550100.5]}}"#, nil),
            (#"{"blocking":{"add":[18005550100],"remove":[18005550100]}}"#, "blocking.remove[0]"),
            (#"{"identification":{"add":[{"number":18005550100}]}}"#, "identification.add[0].label"),
            (#"{"identification":{"add":[{"number":18005550100,"label":"   "}]}}"#, "identification.add[0].label"),
            (#"{"identification":{"add":[{"number":18005550100,"label":"a\u0007b"}]}}"#, "identification.add[0].label"),
            (
                #"{"identification":{"add":[{"number":18005550100,"label":"\#(String(repeating: "x", count: 101))"}]}}"#,
                "identification.add[0].label"
            ),
            (
                #"{"identification":{"add":[{"number":18005550100,"label":"a"},{"number":18005550100,"label":"b"}]}}"#,
                "identification.add[1].label"
            ),
            (
                #"{"identification":{"add":[{"number":18005550100,"label":"a"}],"remove":[18005550100]}}"#,
                "identification.remove[0]"
            ),
            (#"{"identification":{"add":[{"number":12,"label":"a"}]}}"#, "identification.add[0].number"),
            (#"{"blocking":[]}"#, "blocking"),
            (#"{"blocking":null}"#, "blocking"),
            (#"{"identification":{"remove":null}}"#, "identification.remove"),
            ("[]", nil),
            ("", nil),
        ]
        for (body, field) in cases {
            let response = await fixture.request(fixture.olivia, "PATCH", "/call-directory", body)
            #expect(response.status == 400 && response.errorCode == "VALIDATION_FAILED", "\(body): \(response.text)")
            if let field { #expect(E2EEQueueTests.field(response) == field, "\(body): \(response.text)") }
        }
        let many = (0...CallDirectoryService.maximumChangesPerRequest).map { String(18_005_550_000 + Int64($0)) }
            .joined(separator: ",")
        #expect(
            await fixture.request(fixture.olivia, "PATCH", "/call-directory", #"{"blocking":{"add":[\#(many)]}}"#)
                .status == 400)
        for since in ["abc", "-1", "", "1.5", "99999999999999999"] {
            let response = await fixture.request(fixture.olivia, "GET", "/call-directory?since=\(since)")
            #expect(response.status == 400 && E2EEQueueTests.field(response) == "since", "since=\(since)")
        }
        #expect(try await fixture.list(fixture.olivia).version == 0, "nothing was written")
        for (method, path) in [
            ("GET", "/call-directory"), ("PATCH", "/call-directory"), ("GET", "/call-directory/own"),
        ] {
            #expect(await fixture.world.app.request(method, path, body: "{}").status == 401, "\(method) \(path)")
        }
    }

    @Test func aUsersOwnListHoldsAtMostItsLimitPerKind() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let step = CallDirectoryService.maximumChangesPerRequest
        for batch in 0..<(CallDirectoryService.maximumOwnEntries / step) {
            let numbers = (0..<step).map { String(18_005_500_000 + Int64(batch * step + $0)) }.joined(separator: ",")
            try await fixture.change(fixture.olivia, #"{"blocking":{"add":[\#(numbers)]}}"#)
        }
        let full = await fixture.request(
            fixture.olivia, "PATCH", "/call-directory", #"{"blocking":{"add":[19005550000]}}"#)
        #expect(full.status == 409 && full.errorCode == "CALL_DIRECTORY_FULL", "\(full.text)")
        // Identification has its own limit; a removal and an addition together still fit.
        try await fixture.change(fixture.olivia, #"{"blocking":{"add":[19005550000],"remove":[18005500000]}}"#)
        let whole = try await fixture.list(fixture.olivia)
        #expect(whole.blocking.add.count == CallDirectoryService.maximumOwnEntries)
        #expect(whole.blocking.add == whole.blocking.add.sorted())
    }

    // MARK: Organisations

    @Test func membersGetTheirOrganisationsEntriesMergedWithTheirOwn() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let (olivia, max) = (fixture.olivia, fixture.max)
        let acme = try await fixture.organization("Acme")
        let organization = try await fixture.changeOrganization(
            acme,
            #"{"blocking":{"add":[18005550100,18005550101]},"identification":{"add":[{"number":18005550199,"label":"Acme support"},{"number":18005550198,"label":"Acme sales"}]}}"#
        )
        #expect(
            organization.blockingCount == 2 && organization.identificationCount == 2 && organization.memberCount == 0)
        #expect(try await fixture.list(olivia).version == 0, "not a member yet")

        try await fixture.change(
            olivia,
            #"{"blocking":{"add":[18005550101,14155550000]},"identification":{"add":[{"number":18005550199,"label":"My label"}]}}"#
        )
        let cursor = try await fixture.cursor(olivia)
        #expect(await fixture.admin("PUT", "/admin/organizations/\(acme)/members/\(olivia.id)").status == 204)
        #expect(
            await fixture.admin("PUT", "/admin/organizations/\(acme)/members/\(olivia.id)").status == 204, "idempotent")
        #expect(await fixture.admin("PUT", "/admin/organizations/\(acme)/members/\(max.id)").status == 204)
        #expect(try await fixture.directoryEvents(olivia, after: cursor) == 1)
        let merged = try await fixture.list(olivia)
        #expect(merged.version == 2)
        #expect(merged.blocking.add == [14155550000, 18005550100, 18005550101], "a number in both lists once")
        #expect(
            merged.identification.add == [
                CallDirectoryIdentification(number: 18005550198, label: "Acme sales"),
                CallDirectoryIdentification(number: 18005550199, label: "My label"),
            ], "the user's own label comes first")
        let joined = try await fixture.list(olivia, since: 1)
        #expect(joined.blocking.add == [18005550100] && joined.identification.add.map(\.number) == [18005550198])

        // The organisation drops numbers: a member keeps those they list themselves.
        _ = try await fixture.changeOrganization(
            acme,
            #"{"blocking":{"remove":[18005550100,18005550101]},"identification":{"remove":[18005550199],"add":[{"number":18005550198,"label":"Acme sales team"}]}}"#
        )
        let dropped = try await fixture.list(olivia, since: 2)
        #expect(dropped.blocking == CallDirectoryBlockingChanges(add: [], remove: [18005550100]))
        #expect(
            dropped.identification.remove == [18005550198]
                && dropped.identification.add == [
                    CallDirectoryIdentification(number: 18005550198, label: "Acme sales team")
                ])
        #expect(try await fixture.list(max).blocking.add.isEmpty)

        // Leaving loses the organisation's entries; deleting it takes them from everyone.
        #expect(await fixture.admin("DELETE", "/admin/organizations/\(acme)/members/\(olivia.id)").status == 204)
        let left = try await fixture.list(olivia, since: 3)
        #expect(left.identification.remove == [18005550198] && left.identification.add.isEmpty)
        #expect(await fixture.admin("DELETE", "/admin/organizations/\(acme)").status == 204)
        let maxAfter = try await fixture.list(max)
        #expect(maxAfter.identification.add.isEmpty && maxAfter.blocking.add.isEmpty && maxAfter.version == 3)
        #expect(await fixture.admin("GET", "/admin/organizations/\(acme)").status == 404)
        #expect(try await fixture.list(olivia).blocking.add == [14155550000, 18005550101])
    }

    @Test func theAdminRoutesNeedTheKeyAndAnswerClearly() async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let acme = try await fixture.organization("Acme")
        #expect(
            await fixture.world.app.request(
                "POST", "/admin/organizations", headers: ["Host": "t"], body: #"{"name":"x"}"#
            ).status == 401)
        #expect(
            await fixture.request(fixture.olivia, "GET", "/admin/organizations/\(acme)").status == 401,
            "a user's token is no admin key")
        #expect(E2EEQueueTests.field(await fixture.admin("POST", "/admin/organizations", #"{"name":"  "}"#)) == "name")
        let beta = try await fixture.organization("Beta")
        _ = try await fixture.changeOrganization(
            beta, #"{"identification":{"add":[{"number":18005550199,"label":"Beta desk"}]}}"#)
        let all = try JSONDecoder().decode(
            OrganizationList.self, from: Data(await fixture.admin("GET", "/admin/organizations").bodyBytes))
        #expect(
            all.organizations.map(\.name) == ["Acme", "Beta"] && all.organizations.map(\.identificationCount) == [0, 1])
        let renamed = await fixture.admin("PUT", "/admin/organizations/\(acme)", #"{"name":"Acme Inc."}"#)
        #expect(renamed.status == 200 && renamed.json?["name"] as? String == "Acme Inc.")
        let unknown = UUID().uuidString.lowercased()
        for (method, path) in [
            ("GET", "/admin/organizations/\(unknown)"), ("DELETE", "/admin/organizations/\(unknown)"),
            ("GET", "/admin/organizations/\(unknown)/members"),
            ("PUT", "/admin/organizations/\(unknown)/members/\(fixture.olivia.id)"),
            ("GET", "/admin/organizations/\(unknown)/call-directory"),
            ("PATCH", "/admin/organizations/\(unknown)/call-directory"),
            ("PUT", "/admin/organizations/\(acme)/members/\(unknown)"),
        ] {
            let response = await fixture.admin(method, path, "{}")
            #expect(response.status == 404 && response.errorCode == "NOT_FOUND", "\(method) \(path): \(response.text)")
        }
        #expect(await fixture.admin("PUT", "/admin/organizations/\(acme)/members/\(fixture.olivia.id)").status == 204)
        let members = await fixture.admin("GET", "/admin/organizations/\(acme)/members")
        #expect(members.json?["userIds"] as? [String] == [fixture.olivia.id])
        _ = try await fixture.changeOrganization(acme, #"{"blocking":{"add":[18005550100]}}"#)
        let entries = await fixture.admin("GET", "/admin/organizations/\(acme)/call-directory")
        #expect(
            try JSONDecoder().decode(CallDirectoryOwnEntries.self, from: Data(entries.bodyBytes)).blocking == [
                18005550100
            ])
        #expect(
            await fixture.admin("PATCH", "/admin/organizations/\(acme)/call-directory", #"{"blocking":{"add":[5]}}"#)
                .status == 400)
        // Disabled without a key.
        let plain = try CallWorld()
        defer { plain.close() }
        #expect(
            await plain.app.request("GET", "/admin/organizations/\(acme)", headers: CallDirectoryTests.admin).status
                == 403)
    }

    // MARK: Any history

    /// A seeded run of own and organisation changes and membership moves: from every version
    /// a phone may hold, the answer applied to what it held gives exactly the current list.
    @Test(arguments: [1, 2, 3]) func fromEveryEarlierVersionTheAnswerRebuildsTheCurrentList(seed: UInt64) async throws {
        let fixture = try await Fixture()
        defer { fixture.close() }
        let olivia = fixture.olivia
        let orgs = [try await fixture.organization("a"), try await fixture.organization("b")]
        var random = SplitMix64(seed: seed)
        let pool: [Int64] = (0..<12).map { 18_005_550_000 + $0 }
        var held: [Int64: CallDirectoryList] = [0: try await fixture.list(olivia)]
        for _ in 0..<40 {
            let number = pool[Int(random.next() % UInt64(pool.count))]
            let label = ["x", "y", "z"][Int(random.next() % 3)]
            let body: String
            switch random.next() % 4 {
            case 0:
                body =
                    #"{"blocking":{"add":[\#(number)]},"identification":{"add":[{"number":\#(number),"label":"\#(label)"}]}}"#
            case 1: body = #"{"blocking":{"remove":[\#(number)]},"identification":{"remove":[\#(number)]}}"#
            case 2: body = #"{"identification":{"add":[{"number":\#(number),"label":"\#(label)"}]}}"#
            default: body = #"{"blocking":{"add":[\#(number)]}}"#
            }
            let org = orgs[Int(random.next() % 2)]
            switch random.next() % 4 {
            case 0: try await fixture.change(olivia, body)
            case 1: _ = try await fixture.changeOrganization(org, body)
            case 2: _ = await fixture.admin("PUT", "/admin/organizations/\(org)/members/\(olivia.id)")
            default: _ = await fixture.admin("DELETE", "/admin/organizations/\(org)/members/\(olivia.id)")
            }
            let whole = try await fixture.list(olivia)
            held[whole.version] = whole
        }
        let current = try await fixture.list(olivia)
        for (version, list) in held {
            let answer = try await fixture.list(olivia, since: version)
            let rebuilt = answer.incremental ? Self.apply(answer, to: list) : answer
            #expect(rebuilt.blocking.add == current.blocking.add, "from \(version)")
            #expect(rebuilt.identification.add == current.identification.add, "from \(version)")
            for part in [
                answer.blocking.add, answer.blocking.remove, answer.identification.remove,
                answer.identification.add.map(\.number),
            ] {
                #expect(part == part.sorted() && Set(part).count == part.count, "sorted and distinct from \(version)")
            }
            if answer.incremental {
                // Nothing removed that was not held, nothing added that was (removals go first).
                #expect(Set(answer.blocking.remove).isSubset(of: list.blocking.add))
                #expect(
                    Set(answer.blocking.add).isDisjoint(
                        with: Set(list.blocking.add).subtracting(answer.blocking.remove)))
                #expect(Set(answer.identification.remove).isSubset(of: list.identification.add.map(\.number)))
                #expect(
                    Set(answer.identification.add.map(\.number)).isDisjoint(
                        with: Set(list.identification.add.map(\.number)).subtracting(answer.identification.remove)))
            }
        }
    }

    /// What a phone holds after applying an incremental answer (removals first) to a whole list.
    static func apply(_ answer: CallDirectoryList, to list: CallDirectoryList) -> CallDirectoryList {
        let blocking = Set(list.blocking.add).subtracting(answer.blocking.remove).union(answer.blocking.add)
        var labels = Dictionary(uniqueKeysWithValues: list.identification.add.map { ($0.number, $0.label) })
        for number in answer.identification.remove { labels[number] = nil }
        for entry in answer.identification.add { labels[entry.number] = entry.label }
        return CallDirectoryList(
            version: answer.version, incremental: false, blocking: CallDirectoryBlockingChanges(add: blocking.sorted()),
            identification: CallDirectoryIdentificationChanges(
                add: labels.keys.sorted().map { CallDirectoryIdentification(number: $0, label: labels[$0]!) }))
    }
}
