import Foundation
import SwitchboardWire

/// The coordinator's decisions (SPEC §4 rules 1–7) as a pure state machine: every input — a
/// push, a server read, a call-system callback, a timer — returns the effects to perform, in
/// order. Time and ids come in as inputs; nothing here does I/O.
///
/// Invariants it keeps:
/// - a call is reported to the call system once per push or event and ended there exactly once,
///   with the UUID it was reported under (an end that arrives while a report is pending waits
///   for the report's completion);
/// - every action the call system hands over is completed exactly once (or timed out);
/// - audio starts only when the session is active *and* the call's media engine exists.
public struct CallLedger: Sendable {
    public let configuration: Configuration
    /// The signed-in user.
    public let userID: String
    public internal(set) var entries: [String: Entry] = [:]
    /// Ended calls, oldest first, so old ones can be forgotten.
    var endedOrder: [String] = []
    var byUUID: [UUID: String] = [:]
    var audioSessionActive = false
    var nextReport = 0
    /// Ended calls kept to recognise duplicate and stale pushes.
    static let endedMemory = 64

    public init(userID: String, configuration: Configuration = Configuration()) {
        self.userID = userID
        self.configuration = configuration
    }

    public func entry(uuid: UUID) -> Entry? { byUUID[uuid].flatMap { entries[$0] } }

    /// Calls not yet ended.
    public var liveCallIDs: [String] { entries.values.filter { $0.stage != .ended }.map(\.callID).sorted() }
}
