import Foundation

// The per-call phases an `Entry` moves through besides its stage and its place in the call
// system: each one a single value, so combinations that cannot happen (a confirmed accept that
// was never sent, audio without media, retries of nothing) cannot be written down.
extension CallLedger {
    /// What this device answered an incoming call with.
    enum Answer: Sendable, Equatable {
        case undecided
        /// Accepted here; the server has not confirmed it yet.
        case accepting
        /// The server took our accept: we are a participant there.
        case accepted
        /// Declined here — `afterAccepting` when an accept from here had not got through (a
        /// late one that lands after all is left when a re-read shows it).
        case declined(afterAccepting: Bool)

        /// Accepted on this device (so the server's "accepted" is not "elsewhere").
        var acceptedHere: Bool {
            switch self {
            case .accepting, .accepted, .declined(afterAccepting: true): true
            case .undecided, .declined(afterAccepting: false): false
            }
        }

        /// Declined on this device (so the server's "declined" is not "elsewhere").
        var declinedHere: Bool { if case .declined = self { true } else { false } }

        /// The server answered our accept.
        mutating func serverAccepted() {
            if self == .accepting { self = .accepted }
        }
    }

    /// A decline, leave or cancel the server has not confirmed yet: retried after transient
    /// failures, and sent again with the next token after a 401.
    struct Withdrawal: Sendable, Equatable {
        var request: ServerRequest
        /// How often it was sent.
        var attempts: Int
        /// Refused with 401: it goes again with the next token (`sessionRenewed`).
        var awaitsSession: Bool
    }

    /// The call's media on this device.
    enum Media: Sendable, Equatable {
        case notRequested
        /// A token was asked for, or the room is being joined.
        case requested
        /// In the room: the audio engine exists.
        case joined
        /// Joined, and audio runs (the audio session is active).
        case playing

        /// Mark media as wanted (it stays as it is once further along).
        mutating func request() {
            if self == .notRequested { self = .requested }
        }

        /// The room was joined (the engine exists), with or without audio.
        var joined: Bool { self == .joined || self == .playing }
    }

    /// The microphone on this device: the user's mute and the call system's hold are separate
    /// choices, and either one closes it.
    struct Microphone: Sendable, Equatable {
        var mutedByUser = false
        var held = false

        /// Whether the microphone is closed.
        var closed: Bool { mutedByUser || held }
    }
}
