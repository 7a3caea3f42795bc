import Foundation
import Testing
import SwitchboardKit
import SwitchboardWire

/// The coordinator's decisions as a pure state machine (SPEC §4 rules 1–7): inputs in,
/// effects out, no I/O and no clock.
@Suite("CallLedger: the call decisions without I/O", .timeLimit(.minutes(3)))
struct CallLedgerTests {
    // MARK: Incoming (rules 1–3)

    @Test func aPushIsReportedFirstThenNotifiedFetchedAndWatched() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let effects = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        #expect(effects == [
            .reportIncoming(Fixture.uuid(call), Fixture.push(call).update, report: 1),
            .notify(.incoming(callID: call.id, origin: .push)),
            .server(callID: call.id, .fetch),
            .watch,
        ])
        #expect(ledger.liveCallIDs == [call.id])
    }

    @Test func aForegroundCallFromTheEventStreamTakesThePushPath() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let effects = ledger.callRead(call)
        #expect(effects == [
            .reportIncoming(Fixture.uuid(call), CallUpdate(handle: call.scopeId), report: 1),
            .notify(.incoming(callID: call.id, origin: .eventStream)),
            .server(callID: call.id, .fetch),
            .watch,
        ])
        // The push for the same call is reported again under the same UUID: no second screen.
        #expect(ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
            == [.reportIncoming(Fixture.uuid(call), CallUpdate(handle: call.scopeId), report: 2)])
    }

    @Test func holdClosesTheMicrophoneAndUnholdKeepsTheUsersOwnMute() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let uuid = Fixture.uuid(call)
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = ledger.reportCompleted(uuid, error: nil)
        func perform(_ kind: CallActionKind) -> [CallLedger.Effect] {
            let id = UUID()
            return ledger.actionPerformed(id: id, CallActionRequest(callUUID: uuid, kind: kind)).filter {
                if case .setMuted = $0 { true } else { false }
            }
        }
        #expect(perform(.setMuted(true)) == [.setMuted(callID: call.id, true)])
        #expect(perform(.setHeld(true)) == [.setMuted(callID: call.id, true)])
        #expect(perform(.setHeld(false)) == [.setMuted(callID: call.id, true)], "still muted by the user")
        #expect(perform(.setMuted(false)) == [.setMuted(callID: call.id, false)])
        #expect(perform(.setHeld(true)) == [.setMuted(callID: call.id, true)])
        #expect(perform(.setHeld(false)) == [.setMuted(callID: call.id, false)])
    }

    @Test func callsThatDoNotRingForMeAreNotReported() {
        var ledger = CallLedger(userID: "me")
        var mine = Fixture.ringing()
        mine.createdBy = "me"
        #expect(ledger.callRead(mine).isEmpty, "my own call does not ring me")
        var answered = Fixture.ringing(id: "call-2")
        answered.invitations[0].state = .accepted
        #expect(ledger.callRead(answered).isEmpty, "answered on another device before I heard of it")
        #expect(ledger.liveCallIDs.isEmpty)
    }

    @Test func aDuplicatePushIsReportedAgainAndNothingElse() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = ledger.reportCompleted(Fixture.uuid(call), error: nil)
        let again = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        #expect(again == [.reportIncoming(Fixture.uuid(call), Fixture.push(call).update, report: 2)])
        #expect(ledger.reportCompleted(Fixture.uuid(call), error: .incomingCall(.callUUIDAlreadyExists)).isEmpty)
        #expect(ledger.entries[call.id]?.stage == .ringing)
    }

    @Test func mustReportFalseSkipsOnlyKnownCalls() {
        var ledger = CallLedger(userID: "me")
        let known = Fixture.ringing(), unknown = Fixture.ringing(id: "call-2")
        _ = ledger.pushReceived(Fixture.push(known), mustReport: true, placeholder: UUID())
        #expect(ledger.pushReceived(Fixture.push(known), mustReport: false, placeholder: UUID()).isEmpty)
        let effects = ledger.pushReceived(Fixture.push(unknown), mustReport: false, placeholder: UUID())
        #expect(effects.first == .reportIncoming(Fixture.uuid(unknown), Fixture.push(unknown).update, report: 2))
    }

    @Test func aPushWithoutACallIDIsReportedAsAPlaceholderAndEndedAsFailed() {
        var ledger = CallLedger(userID: "me")
        let placeholder = UUID()
        #expect(ledger.pushReceived(nil, mustReport: true, placeholder: placeholder)
            == [.reportIncoming(placeholder, CallUpdate(handle: "unknown"), report: 1)])
        #expect(ledger.reportCompleted(placeholder, error: nil) == [.reportEnded(placeholder, .failed)])
        #expect(ledger.liveCallIDs.isEmpty)
    }

    @Test func aStalePushForAnEndedCallIsReportedThenEndedWithTheSameReason() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let uuid = Fixture.uuid(call)
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = ledger.reportCompleted(uuid, error: nil)
        #expect(ledger.callRead(Fixture.ended(call, reason: .missed)).contains(.reportEnded(uuid, .unanswered)))
        // The same push again, after the call system dropped the call.
        #expect(ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
            == [.reportIncoming(uuid, Fixture.push(call).update, report: 2)])
        #expect(ledger.reportCompleted(uuid, error: nil) == [.reportEnded(uuid, .unanswered)])
    }

    @Test func anEndBeforeTheReportCompletedWaitsForIt() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let uuid = Fixture.uuid(call)
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        let ending = ledger.callRead(Fixture.ended(call, reason: .cancelled))
        #expect(!ending.contains { if case .reportEnded = $0 { true } else { false } })
        #expect(ending.contains(.notify(.ended(callID: call.id, reason: .remoteEnded, refusal: nil))))
        #expect(ledger.reportCompleted(uuid, error: nil) == [.reportEnded(uuid, .remoteEnded)])
    }

    @Test
    func theUsersEndBeforeTheReportCompletedWaitsForItToo() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let uuid = Fixture.uuid(call)
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        let ending = ledger.endRequested(call.id)
        #expect(ending.contains(.server(callID: call.id, .decline)))
        let afterReport = ledger.reportCompleted(uuid, error: nil)
        #expect(afterReport.count == 1)
        #expect(afterReport.contains { if case .reportEnded(uuid, _) = $0 { true } else { false } }, "\(afterReport)")
    }

    @Test(arguments: [IncomingCallError.filteredByDoNotDisturb, .filteredByBlockList])
    func aRefusedReportDeclinesOnTheServerAndEndsNothingInTheSystem(_ refusal: IncomingCallError) {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        #expect(ledger.reportCompleted(Fixture.uuid(call), error: .incomingCall(refusal)) == [
            .server(callID: call.id, .decline),
            .notify(.ended(callID: call.id, reason: .failed, refusal: refusal)),
        ])
    }

    // MARK: End reasons (rule 4)

    @Test(arguments: [
        ("declined", CallEndReason.remoteEnded), ("completed", .remoteEnded), ("cancelled", .remoteEnded),
        ("missed", .unanswered), ("busy", .remoteEnded), ("connection_lost", .failed), ("unfriended", .remoteEnded),
        ("blocked", .remoteEnded), ("group_dissolved", .remoteEnded), ("some_future_reason", .failed),
    ])
    func serverEndReasonsMapToTheCallSystems(_ serverReason: String, _ expected: CallEndReason) {
        #expect(CallLedger.endReason(serverReason: CallInfo.EndReason(rawValue: serverReason)) == expected)
    }

    @Test func aMissingServerEndReasonIsAFailure() {
        #expect(CallLedger.endReason(serverReason: nil) == .failed)
    }

    @Test func answeredOrDeclinedOnAnotherDeviceIsReportedAsElsewhereWithoutTellingTheServer() {
        for (invitation, expected) in [(InvitationState.accepted, CallEndReason.answeredElsewhere), (.declined, .declinedElsewhere)] {
            var ledger = CallLedger(userID: "me")
            let call = Fixture.ringing()
            _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
            _ = ledger.reportCompleted(Fixture.uuid(call), error: nil)
            var changed = call
            changed.invitations[0].state = invitation
            changed.state = invitation == .accepted ? .active : .ended
            changed.endReason = invitation == .accepted ? nil : .declined
            #expect(ledger.callRead(changed) == [
                .reportEnded(Fixture.uuid(call), expected),
                .notify(.ended(callID: call.id, reason: expected, refusal: nil)),
            ], "\(invitation)")
        }
    }

    @Test func anOutgoingCallEveryoneWasBusyForEndsWithoutTheCallSystem() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ended(Fixture.outgoing(), reason: .busy)
        #expect(ledger.callCreated(call, handle: "bob") == [.notify(.ended(callID: call.id, reason: .remoteEnded, refusal: nil))])
        #expect(ledger.liveCallIDs.isEmpty)
    }

    // MARK: Answer and dial (rules 5 and 6)

    @Test func anAnswerIsFulfilledOnlyOnceMediaJoined() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let answer = UUID()
        Fixture.answer(&ledger, call, action: answer, join: false)
        #expect(!(ledger.audioSessionActivated().contains(.fulfil(answer))))
        #expect(ledger.mediaJoined(call.id, succeeded: true).first == .fulfil(answer))
    }

    @Test func theAnswerDeadlineFailsTheActionEndsTheCallAndLeaves() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let answer = UUID()
        Fixture.answer(&ledger, call, action: answer, join: false)
        #expect(ledger.timerFired(call.id, .answerDeadline) == [
            .fail(answer),
            .reportEnded(Fixture.uuid(call), .failed),
            .leaveMedia(callID: call.id),
            .server(callID: call.id, .leave),
            .notify(.ended(callID: call.id, reason: .failed, refusal: nil)),
        ])
        // Media that joins afterwards is left again; the action is not completed twice.
        #expect(ledger.mediaJoined(call.id, succeeded: true) == [.leaveMedia(callID: call.id)])
    }

    @Test func aDialIsStartedThroughTheCallSystemWithA45SecondTimeout() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.outgoing()
        let uuid = Fixture.uuid(call)
        #expect(ledger.callCreated(call, handle: "bob") == [
            .requestTransaction(CallActionRequest(callUUID: uuid, kind: .start(handle: "bob", hasVideo: false))),
            .notify(.dialing(callID: call.id)),
            .schedule(callID: call.id, .dialTimeout, afterSeconds: 45),
            .watch,
        ])
        let start = UUID()
        #expect(ledger.actionPerformed(id: start, CallActionRequest(callUUID: uuid, kind: .start(handle: "bob", hasVideo: false)))
            == [.reportConnecting(uuid), .fulfil(start)])
        #expect(ledger.timerFired(call.id, .dialTimeout) == [
            .reportEnded(uuid, .unanswered),
            .server(callID: call.id, .cancel),
            .notify(.ended(callID: call.id, reason: .unanswered, refusal: nil)),
        ])
    }

    // MARK: Audio (rule 7)

    enum AudioOrder: String, CaseIterable, CustomStringConvertible {
        case sessionThenEngine, engineThenSession
        var description: String { rawValue }
    }

    @Test(arguments: AudioOrder.allCases)
    func audioStartsOnceWhicheverOfSessionAndEngineComesSecond(_ order: AudioOrder) {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        Fixture.answer(&ledger, call, action: UUID(), join: false)
        let first: [CallLedger.Effect], second: [CallLedger.Effect]
        switch order {
        case .sessionThenEngine:
            first = ledger.audioSessionActivated()
            second = ledger.mediaJoined(call.id, succeeded: true)
        case .engineThenSession:
            first = ledger.mediaJoined(call.id, succeeded: true)
            second = ledger.audioSessionActivated()
        }
        let again = ledger.audioSessionActivated()
        #expect(!first.contains(.startAudio(callID: call.id)), "not before both happened")
        #expect(second.filter { $0 == .startAudio(callID: call.id) }.count == 1)
        #expect(second.contains(.notify(.audioStarted(callID: call.id))))
        #expect(again.isEmpty, "a repeated activation does not start it twice")
    }

    @Test func deactivationStopsAudioAndAReactivationStartsItAgain() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        Fixture.answer(&ledger, call, action: UUID(), join: true)
        _ = ledger.audioSessionActivated()
        #expect(ledger.audioSessionDeactivated() == [.stopAudio(callID: call.id), .notify(.audioStopped(callID: call.id))])
        #expect(ledger.audioSessionDeactivated().isEmpty)
        #expect(ledger.audioSessionActivated() == [.startAudio(callID: call.id), .notify(.audioStarted(callID: call.id))])
    }

    @Test func aResetStopsAudioLeavesMediaAndTheServerWithoutReportingAnEnd() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        Fixture.answer(&ledger, call, action: UUID(), join: true)
        _ = ledger.audioSessionActivated()
        #expect(ledger.callSystemReset() == [
            .stopAudio(callID: call.id),
            .notify(.audioStopped(callID: call.id)),
            .leaveMedia(callID: call.id),
            .server(callID: call.id, .leave),
            .notify(.ended(callID: call.id, reason: nil, refusal: nil)),
        ])
        #expect(ledger.audioSessionActivated().isEmpty, "no audio for a call that is gone")
    }

    // MARK: Every path ends exactly once (rule 4)

    enum EndPath: String, CaseIterable, CustomStringConvertible {
        case remoteCancel, answeredElsewhere, userDeclines, answerDeadline, mediaFails, answerTimedOut, dialTimeout
        case reportRefused, callSystemReset
        var description: String { rawValue }

        /// Whether the call system hears the end as a report (otherwise an end action, a
        /// refusal or the reset already ended it there).
        var reported: Bool {
            switch self {
            case .userDeclines, .reportRefused, .callSystemReset: false
            default: true
            }
        }
    }

    @Test(arguments: EndPath.allCases)
    func everyPathEndsExactlyOnceWhateverArrivesLate(_ path: EndPath) {
        var ledger = CallLedger(userID: "me")
        let outgoing = path == .dialTimeout
        let call = outgoing ? Fixture.outgoing() : Fixture.ringing()
        let uuid = Fixture.uuid(call)
        var effects: [CallLedger.Effect] = []
        if outgoing {
            _ = ledger.callCreated(call, handle: "bob")
            _ = ledger.transactionCompleted(CallActionRequest(callUUID: uuid, kind: .start(handle: "bob", hasVideo: false)), error: nil)
        } else {
            _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
            if path != .reportRefused { _ = ledger.reportCompleted(uuid, error: nil) }
        }
        let answer = UUID()
        switch path {
        case .remoteCancel: effects = ledger.callRead(Fixture.ended(call, reason: .cancelled))
        case .answeredElsewhere:
            var changed = call
            changed.state = .active
            changed.invitations[0].state = .accepted
            effects = ledger.callRead(changed)
        case .userDeclines: effects = ledger.actionPerformed(id: UUID(), CallActionRequest(callUUID: uuid, kind: .end))
        case .answerDeadline:
            Fixture.answer(&ledger, call, action: answer, join: false)
            effects = ledger.timerFired(call.id, .answerDeadline)
        case .mediaFails:
            Fixture.answer(&ledger, call, action: answer, join: false)
            effects = ledger.mediaJoined(call.id, succeeded: false)
        case .answerTimedOut:
            Fixture.answer(&ledger, call, action: answer, join: false)
            effects = ledger.actionTimedOut(id: answer)
        case .dialTimeout: effects = ledger.timerFired(call.id, .dialTimeout)
        case .reportRefused: effects = ledger.reportCompleted(uuid, error: .incomingCall(.filteredByDoNotDisturb))
        case .callSystemReset: effects = ledger.callSystemReset()
        }
        #expect(Self.endedNotices(effects) == 1, "\(effects)")
        #expect(Self.reportedEnds(effects) == (path.reported ? 1 : 0), "\(effects)")
        #expect(ledger.liveCallIDs.isEmpty)

        // Whatever arrives afterwards ends nothing again and tells the server nothing more.
        var late: [CallLedger.Effect] = []
        late += ledger.callRead(Fixture.ended(call, reason: .cancelled))
        late += ledger.timerFired(call.id, .answerDeadline)
        late += ledger.timerFired(call.id, .dialTimeout)
        late += ledger.endRequested(call.id)
        late += ledger.callSystemReset()
        late += ledger.mediaJoined(call.id, succeeded: false)
        late += ledger.actionTimedOut(id: answer)
        late += ledger.serverAnswered(call.id, .accept, .failure(status: 503, code: "CALL_MEDIA_UNAVAILABLE"))
        late += ledger.reportCompleted(uuid, error: nil)
        #expect(Self.endedNotices(late) == 0, "\(late)")
        #expect(Self.reportedEnds(late) == 0, "\(late)")
        #expect(!late.contains { if case .server = $0 { true } else { false } }, "\(late)")
        #expect(!late.contains { if case .fail = $0 { true } else { false } }, "\(late)")
        // An end action for it is still fulfilled (never failed).
        let endAction = UUID()
        #expect(ledger.actionPerformed(id: endAction, CallActionRequest(callUUID: uuid, kind: .end)) == [.fulfil(endAction)])
    }

    private static func endedNotices(_ effects: [CallLedger.Effect]) -> Int {
        effects.filter { if case .notify(.ended) = $0 { true } else { false } }.count
    }

    private static func reportedEnds(_ effects: [CallLedger.Effect]) -> Int {
        effects.filter { if case .reportEnded = $0 { true } else { false } }.count
    }
}

// MARK: - Fixtures

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
        #expect(!effects.contains { if case .reportEnded = $0 { true } else { false } }, "the call system already ended it")
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
        #expect(ledger.reportCompleted(uuid, error: .incomingCall(.callUUIDAlreadyExists)) == [.reportEnded(uuid, .remoteEnded)])
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
            let effects = ledger.serverAnswered(call.id, .leave, .failure(status: 503, code: "CALL_MEDIA_UNAVAILABLE"))
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
        _ = ledger.transactionCompleted(CallActionRequest(callUUID: CallIdentity.uuid(forCallID: call.id), kind: .start(handle: "bob", hasVideo: false)), error: nil)
        #expect(ledger.endRequested(call.id) == [.requestTransaction(CallActionRequest(callUUID: CallIdentity.uuid(forCallID: call.id), kind: .end))])
        let ended = ledger.transactionCompleted(CallActionRequest(callUUID: CallIdentity.uuid(forCallID: call.id), kind: .end), error: .transaction(.unknownCallUUID))
        #expect(ended.contains(.server(callID: call.id, .cancel)))
        #expect(ledger.serverAnswered(call.id, .cancel, .failure(status: 409, code: "CALL_NOT_RINGING")) == [.server(callID: call.id, .fetch)])
        var answered = call
        answered.state = .active
        answered.invitations[0].state = .accepted
        #expect(ledger.serverAnswered(call.id, .fetch, .call(answered)) == [.server(callID: call.id, .leave)], "still in the call: leave")
    }

    @Test func aCalleeWhoseAcceptFailedDeclinesSoTheCallerStopsRinging() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = ledger.reportCompleted(Fixture.uuid(call), error: nil)
        _ = ledger.actionPerformed(id: UUID(), CallActionRequest(callUUID: Fixture.uuid(call), kind: .answer))
        let failed = ledger.serverAnswered(call.id, .accept, .failure(status: 503, code: "CALL_MEDIA_UNAVAILABLE"))
        #expect(failed.contains(.server(callID: call.id, .decline)))
        #expect(failed.contains(.reportEnded(Fixture.uuid(call), .failed)))
    }
}

/// The caller's early media token (weak networks): asked beside the re-read while ringing.
@Suite("CallLedger: early media token for the caller", .timeLimit(.minutes(3)))
struct EarlyMediaTokenTests {
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

    @Test func aChangeToARingingOutgoingCallAsksForATokenBesideTheReread() {
        var (ledger, call) = Self.dialing()
        #expect(ledger.callChanged(call.id) == [.server(callID: call.id, .earlyMediaToken), .server(callID: call.id, .fetch)])
        #expect(ledger.callChanged(call.id) == [.server(callID: call.id, .fetch)], "one early ask at a time")
        var incoming = CallLedger(userID: "me")
        #expect(incoming.callChanged("other") == [.server(callID: "other", .fetch)])
    }

    @Test func anEarlyTokenJoinsAtOnceAndTheRereadAsksNothingMore() {
        var (ledger, call) = Self.dialing()
        _ = ledger.callChanged(call.id)
        #expect(ledger.serverAnswered(call.id, .earlyMediaToken, .mediaToken(Fixture.token)) == [.joinMedia(callID: call.id, Fixture.token)])
        #expect(ledger.entries[call.id]?.stage == .connecting)
        #expect(ledger.callRead(Self.answered(call)).isEmpty)
        #expect(ledger.mediaJoined(call.id, succeeded: true).contains(.reportConnected(ledger.entries[call.id]!.uuid)))
    }

    @Test func anEarlyTokenThatCameTooSoonIsAskedForAgainOnceTheAnswerIsSeen() {
        var (ledger, call) = Self.dialing()
        _ = ledger.callChanged(call.id)
        #expect(ledger.callRead(Self.answered(call)).isEmpty, "the early ask is still out")
        #expect(ledger.serverAnswered(call.id, .earlyMediaToken, .failure(status: 403, code: "NOT_PARTICIPANT"))
            == [.server(callID: call.id, .mediaToken)])
        #expect(ledger.serverAnswered(call.id, .mediaToken, .mediaToken(Fixture.token)) == [.joinMedia(callID: call.id, Fixture.token)])
    }

    @Test func anEarlyTokenRefusedWhileStillRingingChangesNothing() {
        var (ledger, call) = Self.dialing()
        _ = ledger.callChanged(call.id)
        #expect(ledger.serverAnswered(call.id, .earlyMediaToken, .failure(status: 403, code: "NOT_PARTICIPANT")).isEmpty)
        #expect(ledger.entries[call.id]?.stage == .dialing)
        #expect(ledger.callChanged(call.id).contains(.server(callID: call.id, .earlyMediaToken)), "the next change may ask again")
    }
}

private enum Fixture {
    static let stamp = "2026-11-30T00:00:00.000Z"
    static let token = MediaToken(url: "wss://media.test", token: "token", expiresAt: stamp)

    /// Alice calls me.
    static func ringing(id: String = "call-1") -> CallInfo {
        CallInfo(
            id: id, scopeKind: .conversation, scopeId: "conv-alice", mode: .audio, state: .ringing, endReason: nil,
            createdBy: "alice", createdAt: stamp, answeredAt: nil, endedAt: nil,
            invitations: [CallInvitationInfo(userId: "me", state: .ringing, updatedAt: stamp)],
            participants: [CallParticipantInfo(userId: "alice", joinedAt: stamp, leftAt: nil)])
    }

    /// I call Bob.
    static func outgoing(id: String = "call-out") -> CallInfo {
        CallInfo(
            id: id, scopeKind: .conversation, scopeId: "conv-bob", mode: .audio, state: .ringing, endReason: nil,
            createdBy: "me", createdAt: stamp, answeredAt: nil, endedAt: nil,
            invitations: [CallInvitationInfo(userId: "bob", state: .ringing, updatedAt: stamp)],
            participants: [CallParticipantInfo(userId: "me", joinedAt: stamp, leftAt: nil)])
    }

    static func ended(_ call: CallInfo, reason: CallInfo.EndReason) -> CallInfo {
        var call = call
        call.state = .ended
        call.endReason = reason
        call.endedAt = stamp
        for index in call.invitations.indices where call.invitations[index].state == .ringing {
            call.invitations[index].state = reason == .missed ? .missed : (reason == .busy ? .busy : .cancelled)
        }
        for index in call.participants.indices { call.participants[index].leftAt = stamp }
        return call
    }

    static func accepted(_ call: CallInfo) -> CallInfo {
        var call = call
        call.state = .active
        call.answeredAt = stamp
        call.invitations[0].state = .accepted
        call.participants.append(CallParticipantInfo(userId: "me", joinedAt: stamp, leftAt: nil))
        return call
    }

    static func uuid(_ call: CallInfo) -> UUID { CallIdentity.uuid(forCallID: call.id) }

    static func push(_ call: CallInfo) -> IncomingCallPush {
        IncomingCallPush(callID: call.id, scopeKind: call.scopeKind, scopeID: call.scopeId, mode: call.mode, callerName: call.createdBy)
    }

    /// Push, report, answer action, server accept, media token; media joined when `join`.
    static func answer(_ ledger: inout CallLedger, _ call: CallInfo, action: UUID, join: Bool) {
        let uuid = uuid(call)
        if ledger.entries[call.id] == nil {
            _ = ledger.pushReceived(push(call), mustReport: true, placeholder: UUID())
            _ = ledger.reportCompleted(uuid, error: nil)
        }
        #expect(ledger.actionPerformed(id: action, CallActionRequest(callUUID: uuid, kind: .answer)) == [
            .server(callID: call.id, .accept),
            .schedule(callID: call.id, .answerDeadline, afterSeconds: 10),
        ])
        #expect(ledger.serverAnswered(call.id, .accept, .call(accepted(call))) == [.server(callID: call.id, .mediaToken)])
        #expect(ledger.serverAnswered(call.id, .mediaToken, .mediaToken(token)) == [.joinMedia(callID: call.id, token)])
        if join { _ = ledger.mediaJoined(call.id, succeeded: true) }
    }
}
