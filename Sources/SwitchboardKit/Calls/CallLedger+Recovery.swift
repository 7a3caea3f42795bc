import Foundation
import SwitchboardWire

// Catching up after an outage and giving calls up under memory pressure (SPEC §4 rule 12).
extension CallLedger {
    /// The active calls were re-read after an outage (`GET /calls/active`): each is read as
    /// any server read (a call that rang meanwhile is reported once, through the push path),
    /// and every live call the list does not name is re-read on its own (it ended meanwhile,
    /// or the server no longer shows it to us).
    public mutating func activeCallsRead(_ calls: [CallInfo]) -> [Effect] {
        var effects: [Effect] = []
        for call in calls.sorted(by: { $0.id < $1.id }) { effects += callRead(call) }
        let listed = Set(calls.map(\.id))
        for callID in liveCallIDs where !listed.contains(callID) && !(entries[callID]?.unresolved ?? false) {
            effects.append(.server(callID: callID, .fetch))
        }
        if !effects.isEmpty, !liveCallIDs.isEmpty, !effects.contains(.watch) { effects.append(.watch) }
        return effects
    }

    /// The app is about to run out of memory: every live call ends now, cleanly — its pending
    /// action fails, the call system hears "failed" once, media leaves, the server is told —
    /// rather than the process being killed mid-call with the call left behind.
    public mutating func memoryExhausted() -> [Effect] {
        var effects: [Effect] = []
        for callID in liveCallIDs { effects += failCall(callID) }
        return effects
    }
}
