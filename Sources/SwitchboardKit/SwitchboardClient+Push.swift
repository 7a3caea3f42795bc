import Foundation
import SwitchboardWire

// The person's say over their phones, and calls that ring only some members.
extension SwitchboardClient {
    /// The signed-in user's do not disturb, snooze, quiet hours and favourites
    /// (`GET /me/push-preferences`): every call rings until they set any.
    public func pushPreferences() async throws -> PushPreferences {
        try await call("GET", "/me/push-preferences")
    }

    /// Replaces them as a whole (`PUT /me/push-preferences`); answers them as stored. A field
    /// the server refuses is a ``SwitchboardAPIError`` with code `.validationFailed` naming it.
    public func setPushPreferences(_ preferences: PushPreferences) async throws -> PushPreferences {
        try await call("PUT", "/me/push-preferences", body: preferences, repeatable: true)
    }

    /// Starts a call that rings only `ring`'s members (`.all`, `.none`, or `.only([ids])`); the
    /// others get a quiet notice and can answer all the same.
    public func createCall(
        scopeKind: ScopeKind, scopeID: String, mode: CallMode, ring: CallRing, clientID: UUID = UUID()
    ) async throws -> CallInfo {
        try await call(
            "POST", "/calls",
            body: CreateCall(
                scopeKind: scopeKind, scopeId: scopeID, mode: mode, clientId: clientID.uuidString.lowercased(),
                ring: ring),
            repeatable: true)
    }
}
