import Foundation
import SwitchboardWire

// The reads and changes of the social graph a contacts screen needs, beside the ones the call
// paths use (`sendFriendRequest(toUserID:)`, `acceptFriendRequest`, `createGroup`).
extension SwitchboardClient {
    /// The signed-in user's friends (`GET /friends`), each with the pair's conversation, the
    /// scope of a 1:1 call.
    public func friends() async throws -> [Friend] {
        try await call("GET", "/friends")
    }

    /// Pending friend requests, incoming and outgoing, oldest first (`GET /friend-requests`).
    public func friendRequests() async throws -> FriendRequestList {
        try await call("GET", "/friend-requests")
    }

    /// Asks a user, named by username, to be friends (`POST /friend-requests`).
    public func sendFriendRequest(toUsername username: String) async throws -> FriendRequest {
        try await call("POST", "/friend-requests", body: SendFriendRequest(username: username))
    }

    /// Declines an incoming request (`POST /friend-requests/{id}/decline`).
    public func declineFriendRequest(_ requestID: String) async throws -> FriendRequest {
        try await call("POST", "/friend-requests/\(QueryEncoding.encode(requestID))/decline")
    }

    /// Withdraws an outgoing request (`DELETE /friend-requests/{id}`).
    public func cancelFriendRequest(_ requestID: String) async throws {
        try await send("DELETE", "/friend-requests/\(QueryEncoding.encode(requestID))")
    }

    /// Ends a friendship (`DELETE /friends/{userId}`); the server ends the pair's live call.
    public func removeFriend(userID: String) async throws {
        try await send("DELETE", "/friends/\(QueryEncoding.encode(userID))")
    }

    /// The groups the signed-in user is a member of (`GET /groups`), oldest first.
    public func groups() async throws -> [Group] {
        try await call("GET", "/groups")
    }
}
