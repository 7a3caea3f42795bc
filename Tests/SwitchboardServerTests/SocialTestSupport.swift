import Foundation
import Synchronization
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardWire
import SwitchboardObservability

/// A registered user as the social tests drive one.
struct SocialUser: Sendable, Equatable {
    let id: String
    let username: String
    let token: String
}

/// Drives the social API of an in-process `TestApplication` the way a client would: register,
/// befriend, create groups, send messages, and read each user's event feed.
///
/// Each user's feed is read from a cursor kept here, so `events(of:)` returns what happened to
/// that user since the previous call, the way a client's event consumer sees it.
final class SocialClient: Sendable {
    let app: TestApplication
    private let cursors = Mutex<[String: Int64]>([:])

    init(_ app: TestApplication) { self.app = app }

    /// Bearer headers for `token`.
    static func headers(_ token: String?) -> HTTPHeaders {
        guard let token else { return ["Host": "t"] }
        return ["Host": "t", "Authorization": "Bearer \(token)"]
    }

    /// A request as `user` (`nil` sends no token).
    func call(_ user: SocialUser?, _ method: String, _ path: String, _ body: String = "") async -> HTTPResponse {
        await app.request(method, path, headers: Self.headers(user?.token), body: body)
    }

    /// Registers a user with a valid password and display name.
    func register(_ username: String) async throws -> SocialUser {
        let response = await app.request(
            "POST", "/auth/register", headers: ["Host": "t"],
            body:
                #"{"username":"\#(username)","password":"correct horse battery","displayName":"\#(username.capitalized)"}"#
        )
        try #require(response.status == 201, "register \(username): \(response.status) \(response.text)")
        let session = try response.decoded(AuthSession.self)
        return SocialUser(id: session.user.id, username: session.user.username, token: session.token)
    }

    /// `from` sends a friend request to `to`; returns the request id.
    func requestFriendship(from: SocialUser, to: SocialUser) async throws -> String {
        let response = await call(from, "POST", "/friend-requests", #"{"userId":"\#(to.id)"}"#)
        try #require(response.status == 201, "friend request: \(response.status) \(response.text)")
        return try response.decoded(FriendRequest.self).id
    }

    /// Makes the two friends (request and accept); returns the pair's conversation id.
    func befriend(_ a: SocialUser, _ b: SocialUser) async throws -> String {
        let requestID = try await requestFriendship(from: a, to: b)
        let response = await call(b, "POST", "/friend-requests/\(requestID)/accept")
        try #require(response.status == 200, "accept: \(response.status) \(response.text)")
        return try response.decoded(Friend.self).conversationId
    }

    /// `blocker` blocks `target`.
    func block(_ target: SocialUser, by blocker: SocialUser) async throws {
        let response = await call(blocker, "PUT", "/blocks/\(target.id)")
        try #require(response.status == 200, "block: \(response.status) \(response.text)")
    }

    /// `owner` creates a group with `members`; returns the group id.
    func createGroup(_ name: String, owner: SocialUser, members: [SocialUser]) async throws -> String {
        let ids = members.map { #""\#($0.id)""# }.joined(separator: ",")
        let response = await call(owner, "POST", "/groups", #"{"name":"\#(name)","memberIds":[\#(ids)]}"#)
        try #require(response.status == 201, "create group: \(response.status) \(response.text)")
        return try response.decoded(Group.self).id
    }

    /// Sends a text message to a conversation; returns the response.
    func send(
        _ text: String, from sender: SocialUser, toConversation conversationID: String, clientId: String? = nil
    ) async -> HTTPResponse {
        await call(
            sender, "POST", "/conversations/\(conversationID)/messages", Self.messageBody(text, clientId: clientId))
    }

    /// Sends a text message to a group; returns the response.
    func send(
        _ text: String, from sender: SocialUser, toGroup groupID: String, clientId: String? = nil
    ) async -> HTTPResponse {
        await call(sender, "POST", "/groups/\(groupID)/messages", Self.messageBody(text, clientId: clientId))
    }

    /// Sends a message that must be stored; returns its id.
    func post(_ text: String, from sender: SocialUser, toConversation conversationID: String) async throws -> String {
        let response = await send(text, from: sender, toConversation: conversationID)
        try #require(response.status == 201, "send: \(response.status) \(response.text)")
        return try response.decoded(Message.self).id
    }

    /// Sends a group message that must be stored; returns its id.
    func post(_ text: String, from sender: SocialUser, toGroup groupID: String) async throws -> String {
        let response = await send(text, from: sender, toGroup: groupID)
        try #require(response.status == 201, "send: \(response.status) \(response.text)")
        return try response.decoded(Message.self).id
    }

    /// A `SendMessage` body.
    static func messageBody(_ text: String, clientId: String?) -> String {
        let client = clientId.map { #","clientId":"\#(JSONText.escape($0))""# } ?? ""
        return #"{"text":"\#(JSONText.escape(text))"\#(client)}"#
    }

    /// A conversation as `user` sees it.
    func conversation(_ id: String, as user: SocialUser) async throws -> Conversation {
        let response = await call(user, "GET", "/conversations/\(id)")
        try #require(response.status == 200, "get conversation: \(response.status) \(response.text)")
        return try response.decoded(Conversation.self)
    }

    /// A page of messages (`path` is a conversation or group messages path with its query) as
    /// `user` sees it.
    func messages(_ path: String, as user: SocialUser) async throws -> MessagePage {
        let response = await call(user, "GET", path)
        try #require(response.status == 200, "messages: \(response.status) \(response.text)")
        return try response.decoded(MessagePage.self)
    }

    /// The events addressed to `user` since the previous call for that user (all of them the
    /// first time), read with `GET /events?after=N&wait=0`.
    func events(of user: SocialUser) async throws -> [Event] {
        let after = cursors.withLock { $0[user.id] ?? 0 }
        let response = await call(user, "GET", "/events?after=\(after)&wait=0")
        try #require(response.status == 200, "events: \(response.status) \(response.text)")
        let page = try response.decoded(EventsPage.self)
        cursors.withLock { $0[user.id] = page.cursor }
        return page.events
    }

    /// Expects each of `users` to have been told exactly `kinds` (in order) since the last look;
    /// returns all their events.
    @discardableResult
    func expectEvents(
        _ kinds: [EventKind], for users: [SocialUser], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> [Event] {
        var all: [Event] = []
        for user in users {
            let events = try await events(of: user)
            #expect(events.kinds == kinds, "events of \(user.username)", sourceLocation: sourceLocation)
            all += events
        }
        return all
    }

    /// Forgets what happened so far: the next `events(of:)` returns only newer events.
    func skipEvents(of users: SocialUser...) async throws {
        for user in users { _ = try await events(of: user) }
    }
}

extension HTTPResponse {
    /// The JSON body decoded as `type`.
    func decoded<T: Decodable>(_ type: T.Type) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(bodyBytes))
        } catch {
            Issue.record("cannot decode \(type) from \(status) \(text)")
            throw error
        }
    }

    /// The error envelope's `code`, if this is an error answer.
    var apiErrorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
    /// The error envelope's `field`, if it names one.
    var apiErrorField: String? { (json?["error"] as? [String: Any])?["field"] as? String }
    /// The error envelope's `message`.
    var apiErrorMessage: String? { (json?["error"] as? [String: Any])?["message"] as? String }
}

extension Array where Element == Event {
    /// The kinds, in order.
    var kinds: [EventKind] { map(\.kind) }
}
