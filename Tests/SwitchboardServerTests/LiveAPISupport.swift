import Foundation
import Testing

/// A registered user of a server under test, and its Authorization header.
struct LiveAccount: Sendable {
    let token: String
    let id: String
    var auth: [String: String] { ["Authorization": "Bearer \(token)"] }
}

/// The JSON object in a response body (empty when it is not one).
func liveJSON(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]) ?? [:]
}

/// Registers `name` (password "long enough") on the server at `address`.
func liveRegister(_ address: String, _ name: String) async throws -> LiveAccount {
    let reply = await fetch(
        address, "POST", "/auth/register",
        body: #"{"username":"\#(name)","password":"long enough","displayName":"\#(name)"}"#)
    #expect(reply.status == 201, "register \(name): \(reply.body)")
    let object = liveJSON(reply.body)
    return LiveAccount(
        token: try #require(object["token"] as? String),
        id: try #require((object["user"] as? [String: Any])?["id"] as? String))
}

/// Makes the two friends; returns their conversation id.
func liveBefriend(_ address: String, _ a: LiveAccount, _ b: LiveAccount) async throws -> String {
    let request = await fetch(address, "POST", "/friend-requests", body: #"{"userId":"\#(b.id)"}"#, headers: a.auth)
    #expect(request.status == 201)
    let requestID = try #require(liveJSON(request.body)["id"] as? String)
    let accepted = await fetch(address, "POST", "/friend-requests/\(requestID)/accept", headers: b.auth)
    #expect(accepted.status == 200)
    return try #require(liveJSON(accepted.body)["conversationId"] as? String)
}
