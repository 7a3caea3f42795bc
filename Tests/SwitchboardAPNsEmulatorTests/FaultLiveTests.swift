import Foundation
import SwitchboardAPNsEmulator
import Testing
import SwitchboardTesting

/// Every fault kind over loopback.
@Suite(.timeLimit(.minutes(5))) struct FaultLiveTests {
    struct AnswerFault: Sendable, CustomTestStringConvertible {
        let fault: APNsFault
        let status: Int
        let reason: String
        var testDescription: String { "\(fault.kind.name) → \(status) \(reason)" }
    }

    static let answerFaults: [AnswerFault] = [
        AnswerFault(fault: APNsFault(.unregistered, count: 1), status: 410, reason: "Unregistered"),
        AnswerFault(
            fault: APNsFault(.unregistered, count: 1, reason: "ExpiredToken"), status: 410, reason: "ExpiredToken"),
        AnswerFault(fault: APNsFault(.badDeviceToken, count: 1), status: 400, reason: "BadDeviceToken"),
        AnswerFault(fault: APNsFault(.tooManyRequests, count: 1), status: 429, reason: "TooManyRequests"),
        AnswerFault(fault: APNsFault(.internalServerError, count: 1), status: 500, reason: "InternalServerError"),
        AnswerFault(fault: APNsFault(.serviceUnavailable, count: 1), status: 503, reason: "ServiceUnavailable"),
        AnswerFault(
            fault: APNsFault(.serviceUnavailable, count: 1, reason: "Shutdown"), status: 503, reason: "Shutdown"),
        AnswerFault(
            fault: APNsFault(.respond(status: 403), count: 1, reason: "Forbidden"), status: 403, reason: "Forbidden"),
    ]

    @Test(arguments: answerFaults)
    func anAnswerFaultAnswersOnceThenThePushGoesThrough(_ case_: AnswerFault) async throws {
        try await withEmulator(Fixture.configuration(faults: [case_.fault])) { emulator, port in
            let token = Fixture.deviceToken(10)
            let apnsID = "0f8fad5b-d9cb-469f-a165-70867728950e"
            let first = try await exchange(port: port, [Fixture.push(to: token, apnsID: apnsID)])
            let second = try await exchange(port: port, [Fixture.push(to: token)])
            let faulted = first.responses[0]
            #expect(faulted.status == case_.status)
            #expect(faulted.reason == case_.reason)
            #expect(faulted.header("apns-id") == apnsID)
            #expect(
                (faulted.json?["timestamp"] as? Int).map(Int64.init)
                    == (case_.status == 410 ? Fixture.nowMilliseconds : nil))
            #expect(second.responses[0].status == 200)
            #expect(emulator.inbox(token: token).count == 1)
        }
    }

    @Test func aTokenFaultTouchesOnlyItsToken() async throws {
        let dead = Fixture.deviceToken(11)
        let alive = Fixture.deviceToken(12)
        try await withEmulator(Fixture.configuration(faults: [APNsFault(.unregistered, token: dead)])) {
            emulator, port in
            let result = try await exchange(
                port: port, [Fixture.push(to: dead), Fixture.push(to: alive), Fixture.push(to: dead)])
            #expect(result.responses.map(\.status) == [410, 200, 410])
            #expect(emulator.inbox(token: dead).isEmpty)
            #expect(emulator.inbox(token: alive).count == 1)
        }
    }

    @Test func aDelayedAnswerDoesNotHoldUpOtherStreams() async throws {
        let token = Fixture.deviceToken(13)
        // Held 3 s: the fast push, sent with it, is answered long before (normally within
        // milliseconds), even on a loaded machine.
        let faults = [APNsFault(.delay(milliseconds: 3000), count: 1)]
        try await withEmulator(Fixture.configuration(faults: faults)) { emulator, port in
            let result = try await exchange(
                port: port, [Fixture.push(to: token, callID: "slow"), Fixture.push(to: token, callID: "fast")])
            #expect(result.responses.map(\.status) == [200, 200])
            #expect(try #require(result.responses[0].elapsed) >= 2.95)
            // The second push was answered, and so delivered, while the first was held.
            let callIDs = emulator.inbox(token: token).map {
                (try? JSONSerialization.jsonObject(with: Data($0.payload)) as? [String: Any])?["callId"] as? String
            }
            #expect(callIDs == ["fast", "slow"])
        }
    }

    @Test func aDelayLongerThanTheClientDeadlineIsNeverDelivered() async throws {
        let token = Fixture.deviceToken(15)
        // Held 6 s against the client's 1 s: the reset reaches the emulator long before the answer
        // is due, even on a loaded machine.
        let faults = [APNsFault(.delay(milliseconds: 6000), count: 1)]
        try await withEmulator(Fixture.configuration(faults: faults)) { emulator, port in
            // The client gives up after 1 s and resets the stream.
            let result = try await exchange(port: port, [Fixture.push(to: token)], timeout: 1)
            #expect(result.responses[0].finished == false)
            #expect(await eventually { emulator.stats.delayedAnswersAbandoned == 1 })
            #expect(await eventually { emulator.stats.resetsReceived == 1 })  // the client's RST_STREAM
            #expect(emulator.inbox(token: token).isEmpty)
            // The fault is used up: the retry goes through at once.
            let retry = try await exchange(port: port, [Fixture.push(to: token)])
            #expect(retry.responses[0].status == 200)
            #expect(emulator.inbox(token: token).count == 1)
        }
    }

    @Test func goawayAfterNStreamsAnswersThoseThenClosesWithAReason() async throws {
        let token = Fixture.deviceToken(16)
        let faults = [APNsFault(.goawayAfter(streams: 2), count: 1, reason: "Shutdown")]
        try await withEmulator(Fixture.configuration(faults: faults)) { emulator, port in
            let requests = (0..<5).map { Fixture.push(to: token, callID: String($0)) }
            let result = try await exchange(port: port, requests)
            let goaway = try #require(result.goaway)
            #expect(goaway.lastStreamID == result.responses[1].streamID)
            #expect(goaway.errorCode == 0)
            #expect(goaway.debugData == #"{"reason":"Shutdown"}"#)
            #expect(result.responses.prefix(2).allSatisfy { $0.status == 200 })
            #expect(result.responses.dropFirst(2).allSatisfy { $0.status == nil })
            #expect(emulator.inbox(token: token).count == 2)
            #expect(await eventually { emulator.stats.connectionsOpen == 0 })
            #expect(emulator.stats.goawaysSent == 1)
            #expect(emulator.stats.goawaysSentTotal == 1)
            // The fault applied to one connection; a new one carries all five.
            let next = try await exchange(port: port, requests)
            #expect(next.goaway == nil)
            #expect(next.responses.allSatisfy { $0.status == 200 })
        }
    }

    @Test func aPushResentWithTheSameApnsIDCountsAsADuplicateDelivery() async throws {
        let token = Fixture.deviceToken(18)
        let apnsID = UUID().uuidString.lowercased()
        try await withEmulator(Fixture.configuration()) { emulator, port in
            let first = try await exchange(
                port: port,
                [
                    Fixture.push(to: token, apnsID: apnsID),
                    Fixture.push(to: token, apnsID: UUID().uuidString.lowercased()),
                ])
            #expect(first.responses.map(\.status) == [200, 200], "\(first.responses)")
            #expect(emulator.stats.duplicateDeliveries == 0)
            let again = try await exchange(port: port, [Fixture.push(to: token, apnsID: apnsID)])
            #expect(again.responses[0].status == 200)
            #expect(emulator.stats.pushesDelivered == 3)
            #expect(emulator.stats.duplicateDeliveries == 1)
            #expect(emulator.stats.resetsReceived == 0)
        }
    }

    @Test func aRefusedStreamIsResetAndNotProcessed() async throws {
        let token = Fixture.deviceToken(17)
        let faults = [APNsFault(.refuseStream, token: token, count: 1)]
        try await withEmulator(Fixture.configuration(faults: faults)) { emulator, port in
            let result = try await exchange(port: port, [Fixture.push(to: token, callID: "refused")])
            #expect(result.responses[0].status == nil)
            #expect(result.responses[0].closeErrorCode == 7)  // REFUSED_STREAM
            let retry = try await exchange(port: port, [Fixture.push(to: token, callID: "retried")])
            #expect(retry.responses[0].status == 200)
            let inbox = emulator.inbox(token: token)
            #expect(inbox.count == 1)
            #expect(emulator.stats.streamsRefused == 1)
        }
    }

    @Test func faultsFromAScriptCombine() async throws {
        let token = Fixture.deviceToken(18)
        let script =
            #"{"faults":[{"kind":"serviceUnavailable","count":1},{"kind":"delay","milliseconds":300,"count":1}]}"#
        let faults = try APNsFault.parseScript(Array(script.utf8))
        try await withEmulator(Fixture.configuration(faults: faults)) { _, port in
            let result = try await exchange(port: port, [Fixture.push(to: token)])
            #expect(result.responses[0].status == 503)
            #expect(try #require(result.responses[0].elapsed) >= 0.25)
        }
    }
}
