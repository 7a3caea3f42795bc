import Foundation
import SwitchboardAPNsEmulator
import SwitchboardCrypto
import Testing
import SwitchboardTesting

/// The emulator over real loopback sockets, with an nghttp2 client of the tests' own.
@Suite(.timeLimit(.minutes(5))) struct EmulatorLiveTests {
    @Test(.timeLimit(.minutes(1)))  // a reader that is never woken would wait its full hour
    func anInProcessInboxReaderWakesOnDeliveryAndOtherwiseTimesOut() async throws {
        try await withEmulator { emulator, port in
            let token = Fixture.deviceToken(61)
            #expect(await emulator.inbox(token: token, waitingUpTo: 0.05).isEmpty, "nothing came: empty after the wait")
            async let waited = emulator.inbox(token: token.uppercased(), after: 0, waitingUpTo: 3600)
            try await Task.sleep(nanoseconds: 50_000_000)
            let sent = try await exchange(port: port, [Fixture.push(to: token, callID: "woken")])
            #expect(sent.responses.first?.status == 200)
            let messages = await waited
            #expect(messages.map(\.index) == [1], "the reader woke with the push")
            #expect(await emulator.inbox(token: token, after: 1, waitingUpTo: 0).isEmpty)
        }
    }

    @Test func aValidPushIsAnswered200WithItsApnsIDAndLandsInTheInboxInOrder() async throws {
        try await withEmulator { emulator, port in
            let token = Fixture.deviceToken(1)
            let given = "0f8fad5b-d9cb-469f-a165-70867728950e"
            let first = try await exchange(port: port, [Fixture.push(to: token, callID: "a", apnsID: given)])
            #expect(first.responses[0].status == 200)
            #expect(first.responses[0].header("apns-id") == given)
            #expect(first.responses[0].body.isEmpty)
            let second = try await exchange(port: port, [Fixture.push(to: token, callID: "b")])
            let generated = try #require(second.responses[0].header("apns-id"))
            #expect(generated != given && generated.count == 36)
            _ = try await exchange(port: port, [Fixture.push(to: token, callID: "c")])

            let inbox = try await exchange(port: port, [TestRequest("GET", "/inbox/\(token)?after=0")])
            let json = try #require(inbox.responses[0].json)
            let messages = try #require(json["messages"] as? [[String: Any]])
            #expect(messages.map { $0["index"] as? Int } == [1, 2, 3])
            #expect(messages.map { ($0["payload"] as? [String: Any])?["callId"] as? String } == ["a", "b", "c"])
            #expect(messages.map { $0["apnsId"] as? String } == [given, generated, messages[2]["apnsId"] as? String])
            let headers = try #require(messages[0]["headers"] as? [String: String])
            #expect(headers["apns-topic"] == Fixture.topic)
            #expect(headers["apns-push-type"] == "voip")
            #expect(headers["apns-collapse-id"] == "call_42")
            #expect(headers["authorization"] == nil)
            #expect(messages[0]["receivedAt"] as? String == "2023-11-14T22:13:20.000Z")
            #expect(json["cursor"] as? Int == 3)

            let after2 = try await exchange(port: port, [TestRequest("GET", "/inbox/\(token.uppercased())?after=2")])
            #expect((after2.responses[0].json?["messages"] as? [[String: Any]])?.count == 1)
            #expect(emulator.inbox(token: token).map(\.index) == [1, 2, 3])
            #expect(emulator.stats.responses == ["200": 3])
        }
    }

    @Test func everyValidationFailureIsAnsweredWithItsStatusAndReasonOverTheWire() async throws {
        try await withEmulator { emulator, port in
            let result = try await exchange(port: port, ValidationCase.all.map(\.request))
            for (invalid, response) in zip(ValidationCase.all, result.responses) {
                #expect(response.status == invalid.status, "\(invalid.name)")
                #expect(response.reason == invalid.reason, "\(invalid.name)")
                #expect(response.header("apns-id")?.count == 36, "\(invalid.name)")
                #expect(response.header("content-type") == "application/json", "\(invalid.name)")
            }
            #expect(emulator.inbox(token: ValidationCase.token).isEmpty)
            #expect(emulator.stats.responses["403 InvalidProviderToken"] == 6)
        }
    }

    @Test func aProviderTokenIsAcceptedOnlyFromTheConfiguredKeyAndWhileFresh() async throws {
        try await withEmulator { _, port in
            let other = try ES256PrivateKey.generate()
            let token = Fixture.deviceToken(2)
            let result = try await exchange(
                port: port,
                [
                    Fixture.push(to: token, headers: Fixture.pushHeaders(token: Fixture.providerToken(age: 3000))),
                    Fixture.push(to: token, headers: Fixture.pushHeaders(token: Fixture.providerToken(key: other))),
                    Fixture.push(to: token, headers: Fixture.pushHeaders(token: Fixture.providerToken(age: 3700))),
                ])
            #expect(result.responses.map(\.status) == [200, 403, 403])
            #expect(result.responses.map(\.reason) == [nil, "InvalidProviderToken", "ExpiredProviderToken"])
        }
    }

    @Test func advertisesItsStreamLimit() async throws {
        var configuration = Fixture.configuration()
        configuration.maxConcurrentStreams = 77
        try await withEmulator(configuration) { _, port in
            let result = try await exchange(port: port, [TestRequest("GET", "/control/stats")])
            #expect(result.maxConcurrentStreams == 77)
            #expect(result.responses[0].status == 200)
        }
    }

    @Test func answers200ConcurrentPushesOnOneConnection() async throws {
        try await withEmulator { emulator, port in
            let token = Fixture.deviceToken(3)
            let requests = (0..<200).map { Fixture.push(to: token, callID: String($0)) }
            let result = try await exchange(port: port, requests)
            #expect(result.responses.count == 200)
            #expect(result.responses.allSatisfy { $0.status == 200 })
            #expect(Set(result.responses.compactMap { $0.header("apns-id") }).count == 200)
            let inbox = emulator.inbox(token: token)
            #expect(inbox.map(\.index) == Array(1...200))
            let callIDs = inbox.compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any])?["callId"] as? String
            }
            #expect(Set(callIDs) == Set((0..<200).map(String.init)))
            #expect(emulator.stats.connectionsAccepted == 1)
        }
    }

    @Test func aLongPollReturnsAsSoonAsAPushArrives() async throws {
        try await withEmulator { emulator, port in
            let token = Fixture.deviceToken(4)
            async let polled = exchange(
                port: port, [TestRequest("GET", "/inbox/\(token)?after=0&wait=30")], timeout: 40)
            #expect(await eventually { emulator.stats.longPollsWaiting == 1 })
            let pushed = try await exchange(port: port, [Fixture.push(to: token, callID: "ring")])
            #expect(pushed.responses[0].status == 200)
            let response = try await polled.responses[0]
            // Answered by the push, before its 30 s wait ran out (a timed-out poll would carry the
            // push too, so only the time tells them apart). `elapsed` counts from before the poll
            // registered, so a timed-out answer has elapsed ≥ 30 s; an answer by the push normally
            // comes within milliseconds of the push.
            #expect(try #require(response.elapsed) < 28)
            #expect(response.status == 200)
            let messages = try #require(response.json?["messages"] as? [[String: Any]])
            #expect(messages.count == 1)
            #expect((messages.first?["payload"] as? [String: Any])?["callId"] as? String == "ring")
            #expect(response.json?["cursor"] as? Int == 1)
            #expect(emulator.stats.longPollsWaiting == 0)
        }
    }

    @Test func aLongPollWithNothingNewAnswersEmptyAfterItsWait() async throws {
        try await withEmulator { _, port in
            let result = try await exchange(
                port: port, [TestRequest("GET", "/inbox/\(Fixture.deviceToken(5))?after=0&wait=1")])
            let response = result.responses[0]
            #expect(response.finished)
            #expect(try #require(response.elapsed) >= 0.9)
            #expect(response.bodyText == #"{"messages":[],"cursor":0}"#)
        }
    }

    @Test func theControlAPISetsListsAndClearsFaults() async throws {
        try await withEmulator { emulator, port in
            let token = Fixture.deviceToken(6)
            let script = #"[{"kind":"unregistered","token":"\#(token)","count":1}]"#
            let setUp = try await exchange(
                port: port,
                [
                    TestRequest("POST", "/control/faults", body: Array(script.utf8)),
                    TestRequest("POST", "/control/faults", body: Array(#"{"kind":"nonsense"}"#.utf8)),
                ])
            #expect(setUp.responses[0].status == 200)
            #expect(
                setUp.responses[0].bodyText == #"{"faults":[{"kind":"unregistered","token":"\#(token)","count":1}]}"#)
            #expect(setUp.responses[1].status == 400)
            #expect(setUp.responses[1].bodyText.contains("unknown kind"))

            let pushes = try await exchange(port: port, [Fixture.push(to: token), Fixture.push(to: token)])
            #expect(pushes.responses.map(\.status) == [410, 200])
            #expect(pushes.responses[0].json?["timestamp"] as? Int == Int(Fixture.nowMilliseconds))

            emulator.addFaults([APNsFault(.tooManyRequests)])
            let listed = try await exchange(port: port, [TestRequest("GET", "/control/faults")])
            #expect(listed.responses[0].bodyText == #"{"faults":[{"kind":"tooManyRequests"}]}"#)
            let cleared = try await exchange(
                port: port, [TestRequest("DELETE", "/control/faults"), TestRequest("GET", "/control/stats")])
            #expect(cleared.responses[0].status == 204)
            #expect(emulator.faults.isEmpty)
            let stats = try #require(cleared.responses[1].json)
            #expect(stats["responses"] as? [String: Int] == ["200": 1, "410 Unregistered": 1])
            #expect(stats["pushRequests"] as? Int == 2)
        }
    }

    @Test func anInboxCanBeEmptied() async throws {
        try await withEmulator { emulator, port in
            let token = Fixture.deviceToken(7)
            _ = try await exchange(port: port, [Fixture.push(to: token)])
            let result = try await exchange(port: port, [TestRequest("DELETE", "/inbox/\(token)")])
            #expect(result.responses[0].status == 204)
            #expect(emulator.inbox(token: token).isEmpty)
        }
    }
}
