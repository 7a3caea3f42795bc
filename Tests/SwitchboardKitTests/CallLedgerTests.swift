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
        #expect(
            effects == [
                .reportIncoming(Fixture.uuid(call), Fixture.push(call).update, report: 1),
                .notify(.incoming(callID: call.id, origin: .push)),
                .server(callID: call.id, .fetch),
                .watch,
            ])
        #expect(ledger.liveCallIDs == [call.id])
    }

    @Test func anAcceptAnsweredWithTheMediaTokenJoinsAtOnceWithoutASecondRequest() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = ledger.reportCompleted(Fixture.uuid(call), error: nil)
        let action = UUID()
        _ = ledger.actionPerformed(id: action, CallActionRequest(callUUID: Fixture.uuid(call), kind: .answer))
        #expect(
            ledger.serverAnswered(call.id, .accept, .callAndToken(Fixture.accepted(call), Fixture.token))
                == [.joinMedia(callID: call.id, Fixture.token)])
        #expect(ledger.mediaJoined(call.id, succeeded: true).contains(.fulfil(action)))
        #expect(ledger.entries[call.id]?.stage == .active)
        // A token that comes with an accept after the call ended is not used.
        var late = CallLedger(userID: "me")
        _ = late.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
        _ = late.reportCompleted(Fixture.uuid(call), error: nil)
        _ = late.actionPerformed(id: UUID(), CallActionRequest(callUUID: Fixture.uuid(call), kind: .answer))
        var ended = Fixture.accepted(call)
        ended.state = .ended
        ended.endReason = .cancelled
        #expect(
            !late.serverAnswered(call.id, .accept, .callAndToken(ended, Fixture.token)).contains {
                if case .joinMedia = $0 { true } else { false }
            })
    }

    @Test func aForegroundCallFromTheEventStreamTakesThePushPath() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        let effects = ledger.callRead(call)
        #expect(
            effects == [
                .reportIncoming(Fixture.uuid(call), CallUpdate(handle: call.scopeId), report: 1),
                .notify(.incoming(callID: call.id, origin: .eventStream)),
                .server(callID: call.id, .fetch),
                .watch,
            ])
        // The push for the same call is reported again under the same UUID: no second screen.
        #expect(
            ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
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
        #expect(
            ledger.pushReceived(nil, mustReport: true, placeholder: placeholder)
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
        #expect(
            ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
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
        #expect(
            ledger.reportCompleted(Fixture.uuid(call), error: .incomingCall(refusal)) == [
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
        for (invitation, expected) in [
            (InvitationState.accepted, CallEndReason.answeredElsewhere), (.declined, .declinedElsewhere),
        ] {
            var ledger = CallLedger(userID: "me")
            let call = Fixture.ringing()
            _ = ledger.pushReceived(Fixture.push(call), mustReport: true, placeholder: UUID())
            _ = ledger.reportCompleted(Fixture.uuid(call), error: nil)
            var changed = call
            changed.invitations[0].state = invitation
            changed.state = invitation == .accepted ? .active : .ended
            changed.endReason = invitation == .accepted ? nil : .declined
            #expect(
                ledger.callRead(changed) == [
                    .reportEnded(Fixture.uuid(call), expected),
                    .notify(.ended(callID: call.id, reason: expected, refusal: nil)),
                ], "\(invitation)")
        }
    }

    @Test func anOutgoingCallEveryoneWasBusyForEndsWithoutTheCallSystem() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ended(Fixture.outgoing(), reason: .busy)
        #expect(
            ledger.callCreated(call, handle: "bob") == [
                .notify(.ended(callID: call.id, reason: .remoteEnded, refusal: nil))
            ])
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
        #expect(
            ledger.timerFired(call.id, .answerDeadline) == [
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
        #expect(
            ledger.callCreated(call, handle: "bob") == [
                .requestTransaction(CallActionRequest(callUUID: uuid, kind: .start(handle: "bob", hasVideo: false))),
                .notify(.dialing(callID: call.id)),
                .schedule(callID: call.id, .dialTimeout, afterSeconds: 45),
                .watch,
                .server(callID: call.id, .earlyMediaToken),
            ])
        let start = UUID()
        #expect(
            ledger.actionPerformed(
                id: start, CallActionRequest(callUUID: uuid, kind: .start(handle: "bob", hasVideo: false)))
                == [.reportConnecting(uuid), .fulfil(start)])
        #expect(
            ledger.timerFired(call.id, .dialTimeout) == [
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
        #expect(
            ledger.audioSessionDeactivated() == [.stopAudio(callID: call.id), .notify(.audioStopped(callID: call.id))])
        #expect(ledger.audioSessionDeactivated().isEmpty)
        #expect(
            ledger.audioSessionActivated() == [.startAudio(callID: call.id), .notify(.audioStarted(callID: call.id))])
    }

    @Test func aResetStopsAudioLeavesMediaAndTheServerWithoutReportingAnEnd() {
        var ledger = CallLedger(userID: "me")
        let call = Fixture.ringing()
        Fixture.answer(&ledger, call, action: UUID(), join: true)
        _ = ledger.audioSessionActivated()
        #expect(
            ledger.callSystemReset() == [
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
            _ = ledger.transactionCompleted(
                CallActionRequest(callUUID: uuid, kind: .start(handle: "bob", hasVideo: false)), error: nil)
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
        late += ledger.serverAnswered(call.id, .accept, .failure(status: 503, code: .callMediaUnavailable))
        late += ledger.reportCompleted(uuid, error: nil)
        #expect(Self.endedNotices(late) == 0, "\(late)")
        #expect(Self.reportedEnds(late) == 0, "\(late)")
        #expect(!late.contains { if case .server = $0 { true } else { false } }, "\(late)")
        #expect(!late.contains { if case .fail = $0 { true } else { false } }, "\(late)")
        // An end action for it is still fulfilled (never failed).
        let endAction = UUID()
        #expect(
            ledger.actionPerformed(id: endAction, CallActionRequest(callUUID: uuid, kind: .end)) == [.fulfil(endAction)]
        )
    }

    private static func endedNotices(_ effects: [CallLedger.Effect]) -> Int {
        effects.filter { if case .notify(.ended) = $0 { true } else { false } }.count
    }

    private static func reportedEnds(_ effects: [CallLedger.Effect]) -> Int {
        effects.filter { if case .reportEnded = $0 { true } else { false } }.count
    }
}
