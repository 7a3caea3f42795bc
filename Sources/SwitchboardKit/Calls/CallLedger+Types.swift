import Foundation
import SwitchboardWire

// The ledger's vocabulary: its configuration, what it knows of a call, and what it decides.
extension CallLedger {
    /// Deadlines, in seconds.
    public struct Configuration: Sendable, Equatable {
        /// From the answer action to joined media (rule 5), unless `adaptiveAnswerDeadline`.
        public var answerDeadline: Double
        /// An outgoing call neither answered nor rejected ends after this (rule 6).
        public var dialTimeout: Double
        /// Opt in to the answer deadline of rule 12: `clamp(1.5 + 2·rtt + 5·loss, 1.5, 3.5)` s
        /// from the network quality the SDK's requests measured over the last 5 s, re-evaluated
        /// while the answer waits (CallKit's own action timeout cannot change, so the
        /// coordinator enforces it). Needs a `NetworkQualityMonitor` (a `SwitchboardClient`
        /// backend has one); without one `answerDeadline` applies.
        public var adaptiveAnswerDeadline: Bool

        public init(answerDeadline: Double = 10, dialTimeout: Double = 45, adaptiveAnswerDeadline: Bool = false) {
            self.answerDeadline = answerDeadline
            self.dialTimeout = dialTimeout
            self.adaptiveAnswerDeadline = adaptiveAnswerDeadline
        }
    }

    public enum Direction: String, Sendable, Equatable { case incoming, outgoing }

    /// How a call came to this device.
    public enum Origin: String, Sendable, Equatable { case push, eventStream = "event_stream", dialed }

    /// Where the call stands in the call system.
    public enum SystemState: String, Sendable, Equatable {
        /// `reportNewIncomingCall` or the start transaction is pending.
        case reporting
        /// A stale or duplicate push re-reported this ended call (rule 1): it is ended in the
        /// call system again as soon as the report completes.
        case reportingAgain
        /// The call system shows it.
        case live
        /// Ended in the call system (reported or by an end action).
        case ended
        /// The call system refused it: it never showed.
        case refused

        /// Whether a report to the call system is still to complete (first or again).
        var awaitsReport: Bool { self == .reporting || self == .reportingAgain }
    }

    /// Where the call stands for the user.
    public enum Stage: String, Sendable, Equatable { case ringing, answering, dialing, connecting, active, ended }

    /// A request to the server.
    public enum ServerRequest: Sendable, Equatable {
        case fetch, accept, decline, leave, cancel, mediaToken
        /// A media token asked for while our outgoing call rings, held by the server until the
        /// callee answers (``CallLedger/earlyTokenWaitSeconds``): sent as soon as the call is
        /// created, and again beside the re-read of a `call_changed` when none is on its way.
        /// Its answer is how the caller learns of the answer, token in hand, in one leg.
        case earlyMediaToken
    }

    /// How long the server may hold an early media token request (its `wait`, at most 25).
    public static let earlyTokenWaitSeconds = 25
    /// At most this many early media token requests per call: two holds cover the 45 s a dial
    /// rings, and a call that ended cannot make the ledger ask again and again.
    static let earlyTokenAskLimit = 2

    /// What a server request came back with.
    public enum ServerResult: Sendable, Equatable {
        case call(CallInfo)
        /// An accept answered with the media token beside the call.
        case callAndToken(CallInfo, MediaToken)
        case mediaToken(MediaToken)
        /// The server answered with an error code (`status` 0: no answer).
        case failure(status: Int, code: ErrorCode)
        /// The user's ringing and active calls (`GET /calls/active`): what a `.fetch` of a
        /// placeholder for a push that could not be decrypted reads, to learn its call.
        case calls([CallInfo])
    }

    public enum Timer: String, Sendable, Equatable { case answerDeadline, dialTimeout, withdrawalRetry, resolveRetry }

    /// What the app hears about (its UI and logs).
    public enum Notice: Sendable, Equatable {
        case incoming(callID: String, origin: Origin)
        case dialing(callID: String)
        /// Joining an active group call (after missing or declining it).
        case joining(callID: String)
        case connected(callID: String)
        case audioStarted(callID: String)
        case audioStopped(callID: String)
        /// `reason` is nil when the user ended it on this device; `refusal` is set when the call
        /// system refused the report (Do Not Disturb, block list…).
        case ended(callID: String, reason: CallEndReason?, refusal: IncomingCallError?)
        /// The server refused the session token (401) while calls are live: the coordinator
        /// stopped following them. Refresh the session and pass the new token to
        /// `use(backend:)`; the coordinator then follows and re-reads them. Once per token.
        case tokenRejected
    }

    /// What to do, in order.
    public enum Effect: Sendable, Equatable {
        /// Report to the call system; `report` names the completion that ends the push handler.
        case reportIncoming(UUID, CallUpdate, report: Int)
        case reportConnecting(UUID)
        case reportConnected(UUID)
        case reportEnded(UUID, CallEndReason)
        /// `reportCall(with:updated:)`: what the call system shows changed (a placeholder
        /// learnt which call it is).
        case reportUpdated(UUID, CallUpdate)
        case requestTransaction(CallActionRequest)
        case fulfil(UUID)
        case fail(UUID)
        case server(callID: String, ServerRequest)
        case joinMedia(callID: String, MediaToken)
        case leaveMedia(callID: String)
        case startAudio(callID: String)
        case stopAudio(callID: String)
        case setMuted(callID: String, Bool)
        case schedule(callID: String, Timer, afterSeconds: Double)
        /// Keep following the server's events while calls are live.
        case watch
        case notify(Notice)
    }

    /// Whether an entry's server call is known: a phase, so that what an unresolved
    /// placeholder waits with (reads made, an answer, a decline) cannot outlive it.
    public enum Resolution: Sendable, Equatable {
        case known
        /// `attempts`: reads of `/calls/active` made; `answer`: the answer action taken
        /// meanwhile, performed once the call is known; `declineWhenKnown`: the user ended it,
        /// so its call is declined once it is known.
        case unresolved(attempts: Int, answer: UUID?, declineWhenKnown: Bool)

        /// A placeholder just made, its first read on the way.
        static let started = Resolution.unresolved(attempts: 1, answer: nil, declineWhenKnown: false)

        var attempts: Int { if case .unresolved(let attempts, _, _) = self { attempts } else { 0 } }
        var answer: UUID? { if case .unresolved(_, let answer, _) = self { answer } else { nil } }
        var declinesWhenKnown: Bool { if case .unresolved(_, _, true) = self { true } else { false } }

        /// Another read was made.
        func counted() -> Resolution {
            guard case .unresolved(let attempts, let answer, let decline) = self else { return self }
            return .unresolved(attempts: attempts + 1, answer: answer, declineWhenKnown: decline)
        }

        /// The answer `action` waits for the call to be known.
        func answering(_ action: UUID?) -> Resolution {
            guard case .unresolved(let attempts, _, let decline) = self else { return self }
            return .unresolved(attempts: attempts, answer: action, declineWhenKnown: decline)
        }

        /// The user ended it: no answer waits, and the call is declined once known when `decline`.
        func ended(declining decline: Bool) -> Resolution {
            guard case .unresolved(let attempts, _, _) = self else { return self }
            return .unresolved(attempts: attempts, answer: nil, declineWhenKnown: decline)
        }
    }

    /// One call as this device knows it.
    public struct Entry: Sendable, Equatable {
        /// The server's call id; for a push that could not be decrypted, a placeholder key
        /// (``CallLedger/placeholderPrefix``) until the server says which call it was.
        public internal(set) var callID: String
        public let uuid: UUID
        public let direction: Direction
        public let origin: Origin
        public var update: CallUpdate
        public var system: SystemState
        public var stage: Stage
        /// The reason the call ended with, once it has.
        public var endReason: CallEndReason?
        /// An end that waits for a pending report.
        var queuedEnd: CallEndReason?
        /// The answer or start action still to complete.
        var pendingAction: UUID?
        /// What this device answered (so the server's "accepted" is not "elsewhere").
        var answer = Answer.undecided
        /// A decline, leave or cancel the server has not confirmed yet.
        var withdrawal: Withdrawal?
        /// The server has shown the call active: ending it from here is a leave, not a cancel.
        var serverActive = false
        var media = Media.notRequested
        var microphone = Microphone()
        /// An early media token (held by the server until the answer) is on its way.
        var earlyTokenInFlight = false
        /// How many early media tokens were asked for.
        var earlyTokenAsks = 0
        /// A token was handed to the media connection: any other token that comes is not used.
        var mediaJoinStarted = false
        /// The plain token request failed while the early one was still out (which then decides).
        var mediaTokenFailed = false
        /// Whether this device knows which server call this is.
        public internal(set) var resolution = Resolution.known

        /// A placeholder for a push that could not be decrypted, still asking the server which
        /// call it is (reads of `/calls/active`, or the event stream's first ringing call).
        public var unresolved: Bool { resolution != .known }
        /// What the call system shows changed while its report was pending: sent once it completes.
        var updateAfterReport = false
    }
}
