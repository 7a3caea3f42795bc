import Foundation
import Testing
import SwitchboardTesting

/// SPEC §9 through the real `switchboard` binary over loopback: live location with its event,
/// the city lookup from a MaxMind-format database the test builds, and the E2EE device queue.
@Suite("Live location, city lookup and E2EE through the binary", .serialized, .timeLimit(.minutes(3)))
struct LocationE2EELiveTests {
    @Test func liveLocationAndTheCityLookupThroughTheBinary() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        var writer = MMDBWriter()
        try writer.insertCity(network: "81.2.69.0/24", city: "London", countryCode: "GB")
        try writer.insertCity(network: "2001:480::/32", city: "San Diego", countryCode: "US")
        try writer.insertCity(network: "175.16.199.0/24", city: nil, countryCode: "CN")
        try writer.write(to: data.path + "/cities.mmdb")
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path + "/db"],
            environment: [
                "SWITCHBOARD_CITY_DATABASE_FILE": data.path + "/cities.mmdb", "SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15",
                "SWITCHBOARD_TRUSTED_PROXIES": "127.0.0.1",
            ])
        defer { _ = server.stop() }
        let address = server.address
        let alice = try await liveRegister(address, "alice\(UInt32.random(in: 0...UInt32.max))")
        let bob = try await liveRegister(address, "bob\(UInt32.random(in: 0...UInt32.max))")
        let conversation = try await liveBefriend(address, alice, bob)

        // Bob's long poll is held; Alice's start wakes it with live_location_changed.
        let cursor = try #require(
            liveJSON(await fetch(address, "GET", "/me", headers: bob.auth).body)["eventCursor"] as? Int)
        async let poll = fetch(address, "GET", "/events?after=\(cursor)&wait=20", headers: bob.auth)
        try await Task.sleep(for: .milliseconds(200))
        let started = await fetch(
            address, "POST", "/conversations/\(conversation)/live-locations",
            body: #"{"latitude":51.5072,"longitude":-0.1276,"accuracy":12.5,"durationSeconds":900}"#,
            headers: alice.auth)
        #expect(started.status == 201, "\(started.body)")
        let woken = await poll
        #expect(
            woken.body.contains(#""kind":"live_location_changed""#) && woken.body.contains(conversation),
            "\(woken.body)")
        let listed = await fetch(address, "GET", "/conversations/\(conversation)/live-locations", headers: bob.auth)
        let shares = liveJSON(listed.body)["liveLocations"] as? [[String: Any]] ?? []
        #expect(
            shares.count == 1 && shares.first?["latitude"] as? Double == 51.5072
                && shares.first?["accuracy"] as? Double == 12.5)
        #expect(shares.first?["expiresAt"] is String && shares.first?["updatedAt"] is String)
        let nan = await fetch(
            address, "PUT", "/conversations/\(conversation)/live-locations",
            body: #"{"latitude":NaN,"longitude":0,"accuracy":1}"#, headers: alice.auth)
        #expect(nan.status == 400 && nan.body.contains(#""field":"latitude""#), "\(nan.body)")

        // The city: the peer is loopback (127.0.0.1, named a trusted proxy here), so the
        // nearest untrusted X-Forwarded-For hop counts.
        func city(_ forwarded: String?) async -> String {
            var headers = alice.auth
            if let forwarded { headers["X-Forwarded-For"] = forwarded }
            return await fetch(address, "GET", "/location/city", headers: headers).body
        }
        #expect(await city("81.2.69.160") == #"{"city":"London","countryCode":"GB"}"#)
        #expect(
            await city("10.0.0.8, 81.2.69.160") == #"{"city":"London","countryCode":"GB"}"#,
            "the nearest untrusted hop, from the right")
        #expect(await city("2001:480::1") == #"{"city":"San Diego","countryCode":"US"}"#)
        #expect(await city("175.16.199.7") == #"{"city":null,"countryCode":"CN"}"#)
        #expect(await city("8.8.8.8") == "null", "not in the database")
        #expect(await city("192.168.1.20") == "null", "a private address")
        #expect(await city(nil) == "null", "loopback itself")
        #expect(await fetch(address, "GET", "/location/city").status == 401)
        #expect(server.stop() == 0)
    }

    @Test func aCityDatabaseThatCannotBeOpenedStopsTheStart() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        _ = FileManager.default.createFile(atPath: data.path + "/broken.mmdb", contents: Data("not a database".utf8))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Executable.server.path)
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--data-dir", data.path + "/db"]
        process.environment = ProcessInfo.processInfo.environment.merging([
            "SWITCHBOARD_CITY_DATABASE_FILE": data.path + "/broken.mmdb"
        ]) { $1 }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try ProcessLauncher.run(process)
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus != 0)
        #expect(text.contains("cityDatabaseFile") && text.contains("broken.mmdb"), "\(text)")
    }

    @Test func theE2EEQueueThroughTheBinary() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15"])
        defer { _ = server.stop() }
        let address = server.address
        let alice = try await liveRegister(address, "alice\(UInt32.random(in: 0...UInt32.max))")
        let bob = try await liveRegister(address, "bob\(UInt32.random(in: 0...UInt32.max))")
        let conversation = try await liveBefriend(address, alice, bob)
        let aliceDevice = UUID().uuidString.lowercased(), bobDevice = UUID().uuidString.lowercased()
        #expect(
            await fetch(address, "POST", "/e2ee/devices", body: #"{"deviceId":"\#(aliceDevice)"}"#, headers: alice.auth)
                .status == 201)
        #expect(
            await fetch(address, "POST", "/e2ee/devices", body: #"{"deviceId":"\#(bobDevice)"}"#, headers: bob.auth)
                .status == 201)
        let devices = await fetch(address, "GET", "/e2ee/conversations/\(conversation)/devices", headers: alice.auth)
        #expect((liveJSON(devices.body)["devices"] as? [[String: Any]])?.count == 2)

        let cursor = try #require(
            liveJSON(await fetch(address, "GET", "/me", headers: bob.auth).body)["eventCursor"] as? Int)
        let ciphertext = Data((0..<300).map { UInt8($0 % 256) }).base64EncodedString()
        for kind in ["welcome", "application"] {
            let sent = await fetch(
                address, "POST", "/e2ee/conversations/\(conversation)/messages",
                body:
                    #"{"senderDeviceId":"\#(aliceDevice)","kind":"\#(kind)","recipients":[{"deviceId":"\#(bobDevice)","ciphertext":"\#(ciphertext)"}]}"#,
                headers: alice.auth)
            #expect(sent.status == 201, "\(sent.body)")
        }
        let events = await fetch(address, "GET", "/events?after=\(cursor)&wait=0", headers: bob.auth)
        #expect(events.body.components(separatedBy: #""kind":"e2ee""#).count - 1 == 2, "\(events.body)")
        let page = liveJSON(
            await fetch(
                address, "GET", "/e2ee/conversations/\(conversation)/events?deviceId=\(bobDevice)", headers: bob.auth
            ).body)
        let items = page["items"] as? [[String: Any]] ?? []
        #expect(
            items.map { $0["sequence"] as? Int } == [1, 2]
                && items.map { $0["kind"] as? String } == ["welcome", "application"])
        #expect(items.allSatisfy { $0["ciphertext"] as? String == ciphertext }, "the bytes come back exactly")
        #expect(page["cursor"] as? Int == 2 && page["hasMore"] as? Bool == false)
        let foreign = await fetch(
            address, "GET", "/e2ee/conversations/\(conversation)/events?deviceId=\(bobDevice)", headers: alice.auth)
        #expect(foreign.status == 403 && foreign.body.contains("NOT_YOUR_DEVICE"))
        let acked = liveJSON(
            await fetch(
                address, "GET", "/e2ee/conversations/\(conversation)/events?deviceId=\(bobDevice)&after=2",
                headers: bob.auth
            ).body)
        #expect((acked["items"] as? [Any])?.isEmpty == true)
        #expect(
            await fetch(
                address, "GET", "/e2ee/conversations/\(conversation)/events?deviceId=\(bobDevice)&after=0",
                headers: bob.auth
            ).status == 410)
        #expect(server.stop() == 0)
    }
}
