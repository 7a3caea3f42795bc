import Foundation
import Testing
import SwitchboardKit
import SwitchboardWire

/// CallKit timing out an answer we had just fulfilled.
@Suite("CallLedger: a timeout crossing our fulfilment", .timeLimit(.minutes(3)))
struct CrossedTimeoutTests {
    @Test func anAnswerFulfilledAsCallKitTimedItOutEndsTheCallEverywhere() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let uuid = Fixture.uuid(call)
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = ledger.reportCompleted(uuid, error: nil)
        let answer = UUID(), request = CallActionRequest(callUUID: uuid, kind: .answer)
        _ = ledger.actionPerformed(id: answer, request)
        _ = ledger.serverAnswered(call.id, .accept, .call(Fixture.accepted(call)))
        _ = ledger.serverAnswered(call.id, .mediaToken, .mediaToken(Fixture.token))
        #expect(ledger.mediaJoined(call.id, succeeded: true).contains(.fulfil(answer)))
        let effects = ledger.actionTimedOut(id: answer, request: request)
        #expect(effects.contains(.server(callID: call.id, .leave)) && effects.contains(.leaveMedia(callID: call.id)))
        #expect(
            !effects.contains { if case .reportEnded = $0 { true } else { false } }, "the call system already ended it")
        #expect(ledger.entries[call.id]?.stage == .ended)
        let muted = CallActionRequest(callUUID: uuid, kind: .setMuted(true))
        #expect(ledger.actionTimedOut(id: UUID(), request: muted).isEmpty)
    }
}

/// A stale push racing the end it should follow.
@Suite("CallLedger: a stale push while the end is on its way", .timeLimit(.minutes(3)))
struct StaleReportRaceTests {
    @Test func aStalePushAnsweredAlreadyExistsDoesNotEndTheCallTwice() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let uuid = Fixture.uuid(call)
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = ledger.reportCompleted(uuid, error: nil)
        #expect(ledger.callRead(Fixture.ended(call, reason: .cancelled)).contains(.reportEnded(uuid, .remoteEnded)))
        // The push comes again before the call system processed that end.
        #expect(ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID()).count == 1)
        #expect(ledger.reportCompleted(uuid, error: .incomingCall(.callUUIDAlreadyExists)).isEmpty, "no second end")
        // Once the call system has let it go, a later stale push is reported and ended again.
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        #expect(ledger.reportCompleted(uuid, error: nil) == [.reportEnded(uuid, .remoteEnded)])
    }

    @Test func aDuplicatePushWhileTheFirstReportIsPendingKeepsTheQueuedEnd() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let uuid = Fixture.uuid(call)
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = ledger.callRead(Fixture.ended(call, reason: .cancelled))  // ends while the report is pending
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        #expect(
            ledger.reportCompleted(uuid, error: .incomingCall(.callUUIDAlreadyExists)) == [
                .reportEnded(uuid, .remoteEnded)
            ])
        #expect(ledger.reportCompleted(uuid, error: nil).isEmpty)
    }
}

/// Telling the server we are out survives transient failures, and gives up in the end.
@Suite("CallLedger: withdrawals (decline, leave, cancel)", .timeLimit(.minutes(3)))
struct WithdrawalTests {
    @Test func aLeaveTheServerCouldNotTakeIsRetriedWithBackoffThenGivenUp() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = ledger.reportCompleted(Fixture.uuid(call), error: nil)
        _ = ledger.actionPerformed(id: UUID(), CallActionRequest(callUUID: Fixture.uuid(call), kind: .answer))
        _ = ledger.serverAnswered(call.id, .accept, .call(Fixture.accepted(call)))
        _ = ledger.serverAnswered(call.id, .mediaToken, .mediaToken(Fixture.token))
        _ = ledger.mediaJoined(call.id, succeeded: true)
        let ended = ledger.actionPerformed(id: UUID(), CallActionRequest(callUUID: Fixture.uuid(call), kind: .end))
        #expect(ended.contains(.server(callID: call.id, .leave)), "an accepted call is left")
        var delays: [Double] = []
        for _ in 0..<10 {
            let effects = ledger.serverAnswered(call.id, .leave, .failure(status: 503, code: .callMediaUnavailable))
            guard case .schedule(_, .withdrawalRetry, let delay)? = effects.first else { break }
            delays.append(delay)
            #expect(ledger.timerFired(call.id, .withdrawalRetry) == [.server(callID: call.id, .leave)])
        }
        #expect(delays == [1, 2, 4, 8], "backoff 1, 2, 4, 8 s, then five attempts in all")
        #expect(ledger.timerFired(call.id, .withdrawalRetry).isEmpty)
    }

    @Test func aWithdrawalRefusedWith409RereadsTheCall() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.outgoing()
        _ = ledger.callCreated(call, handle: "bob")
        _ = ledger.transactionCompleted(
            CallActionRequest(
                callUUID: CallIdentity.uuid(forCallID: call.id), kind: .start(handle: "bob", hasVideo: false)),
            error: nil)
        #expect(
            ledger.endRequested(call.id) == [
                .requestTransaction(CallActionRequest(callUUID: CallIdentity.uuid(forCallID: call.id), kind: .end))
            ])
        let ended = ledger.transactionCompleted(
            CallActionRequest(callUUID: CallIdentity.uuid(forCallID: call.id), kind: .end),
            error: .transaction(.unknownCallUUID))
        #expect(ended.contains(.server(callID: call.id, .cancel)))
        #expect(
            ledger.serverAnswered(call.id, .cancel, .failure(status: 409, code: .callNotRinging)) == [
                .server(callID: call.id, .fetch)
            ])
        var answered = call
        answered.state = .active
        answered.invitations[0].state = .accepted
        #expect(
            ledger.serverAnswered(call.id, .fetch, .call(answered)) == [.server(callID: call.id, .leave)],
            "still in the call: leave")
    }

    @Test func aCalleeWhoseAcceptFailedDeclinesSoTheCallerStopsRinging() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = ledger.reportCompleted(Fixture.uuid(call), error: nil)
        _ = ledger.actionPerformed(id: UUID(), CallActionRequest(callUUID: Fixture.uuid(call), kind: .answer))
        let failed = ledger.serverAnswered(call.id, .accept, .failure(status: 503, code: .callMediaUnavailable))
        #expect(failed.contains(.server(callID: call.id, .decline)))
        #expect(failed.contains(.reportEnded(Fixture.uuid(call), .failed)))
    }
}

/// The caller's early media token (weak networks): asked as soon as the call is created (the
/// server holds it until the answer), and beside a re-read while ringing when none is out.
@Suite("CallLedger: early media token for the caller", .timeLimit(.minutes(3)))
struct EarlyMediaTokenTests {
    /// A dial the server created, its held early token on its way.
    static func dialing() -> (CallLedger, CallInfo) {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.outgoing()
        _ = ledger.callCreated(call, handle: "bob")
        return (ledger, call)
    }

    static func answered(_ call: CallInfo) -> CallInfo {
        var call = call
        call.state = .active
        call.invitations[0].state = .accepted
        call.participants.append(CallParticipantInfo(userId: "bob", joinedAt: Fixture.stamp, leftAt: nil))
        return call
    }

    @Test func aRingingDialAsksForTheHeldTokenAtOnceAndOneAtATime() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.outgoing()
        #expect(
            ledger.callCreated(call, handle: "bob").filter { $0 == .server(callID: call.id, .earlyMediaToken) }.count
                == 1)
        #expect(ledger.callChanged(call.id) == [.server(callID: call.id, .fetch)], "one early ask at a time")
        var busy = CallLedger(userID: "me")
        var ended = Fixture.outgoing()
        ended.state = .ended
        ended.endReason = .busy
        #expect(
            !busy.callCreated(ended, handle: "bob").contains(.server(callID: ended.id, .earlyMediaToken)),
            "nothing to wait for")
        var incoming = CallLedger(userID: "me")
        #expect(incoming.callChanged("other") == [.server(callID: "other", .fetch)])
    }

    @Test func anEarlyTokenJoinsAtOnceAndTheRereadAsksNothingMore() {
        var (ledger, call) = Self.dialing()
        #expect(
            ledger.serverAnswered(call.id, .earlyMediaToken, .mediaToken(Fixture.token)) == [
                .joinMedia(callID: call.id, Fixture.token)
            ])
        #expect(ledger.entries[call.id]?.stage == .connecting)
        #expect(ledger.callRead(Self.answered(call)).isEmpty)
        #expect(ledger.mediaJoined(call.id, succeeded: true).contains(.reportConnected(ledger.entries[call.id]!.uuid)))
    }

    /// A re-read that sees the answer asks for a token at once, the held one still out: the
    /// first to come joins, the other is not used.
    @Test func aRereadThatSeesTheAnswerAsksTooAndTheFirstTokenWins() {
        var (ledger, call) = Self.dialing()
        #expect(ledger.callRead(Self.answered(call)) == [.server(callID: call.id, .mediaToken)])
        #expect(
            ledger.serverAnswered(call.id, .mediaToken, .mediaToken(Fixture.token)) == [
                .joinMedia(callID: call.id, Fixture.token)
            ])
        #expect(
            ledger.serverAnswered(call.id, .earlyMediaToken, .mediaToken(Fixture.token)).isEmpty,
            "the late one is not used")
        var (other, otherCall) = Self.dialing()
        _ = other.callRead(Self.answered(otherCall))
        #expect(
            other.serverAnswered(otherCall.id, .earlyMediaToken, .mediaToken(Fixture.token)) == [
                .joinMedia(callID: otherCall.id, Fixture.token)
            ])
        #expect(
            other.serverAnswered(otherCall.id, .mediaToken, .mediaToken(Fixture.token)).isEmpty,
            "the late one is not used")
    }

    /// With both out, one failing leaves the other to decide; the call fails only when both did.
    @Test func theCallFailsOnlyWhenBothTokenRequestsFailed() {
        var (ledger, call) = Self.dialing()
        _ = ledger.callRead(Self.answered(call))
        #expect(
            ledger.serverAnswered(call.id, .mediaToken, .failure(status: 0, code: .transport)).isEmpty,
            "the held one may still come")
        _ = ledger.serverAnswered(call.id, .earlyMediaToken, .failure(status: 0, code: .transport))
        #expect(ledger.entries[call.id]?.stage == .ended && ledger.entries[call.id]?.endReason == .failed)
        var (early, earlyCall) = Self.dialing()
        _ = early.callRead(Self.answered(earlyCall))
        #expect(early.serverAnswered(earlyCall.id, .earlyMediaToken, .failure(status: 0, code: .transport)).isEmpty)
        #expect(
            early.serverAnswered(earlyCall.id, .mediaToken, .mediaToken(Fixture.token)) == [
                .joinMedia(callID: earlyCall.id, Fixture.token)
            ])
    }

    @Test func aHoldThatRanOutWhileStillRingingIsHeldOnceMoreAndTheNextChangeAsksAgain() {
        var (ledger, call) = Self.dialing()
        // 45 s of ringing, 25 s a hold: the first refusal while dialing asks once more.
        #expect(
            ledger.serverAnswered(call.id, .earlyMediaToken, .failure(status: 403, code: .notParticipant)) == [
                .server(callID: call.id, .earlyMediaToken)
            ])
        #expect(ledger.callChanged(call.id) == [.server(callID: call.id, .fetch)], "one early ask at a time")
        #expect(
            ledger.serverAnswered(call.id, .earlyMediaToken, .failure(status: 403, code: .notParticipant)).isEmpty,
            "not a third hold")
        #expect(ledger.entries[call.id]?.stage == .dialing)
        #expect(
            ledger.callChanged(call.id) == [
                .server(callID: call.id, .earlyMediaToken), .server(callID: call.id, .fetch),
            ])
        #expect(
            ledger.serverAnswered(call.id, .earlyMediaToken, .failure(status: 0, code: .transport)).isEmpty,
            "a lost one is not re-sent")
        #expect(
            ledger.callChanged(call.id).contains(.server(callID: call.id, .earlyMediaToken)),
            "the next change asks again")
    }
}
