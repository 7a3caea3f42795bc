import Foundation
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardWire

/// Who calls an endpoint, relative to the fixture's resources.
enum SocialActor: String, Sendable, CaseIterable {
    /// Olivia: the group's owner, the friend request's sender, a participant of the conversation.
    case owner
    /// The other party where one exists: Max for conversations and groups (a member, not the
    /// owner); Rita, the request's recipient, for friend-request endpoints.
    case member
    /// Sam: registered, unrelated to everything.
    case stranger
    /// Bob: Olivia's friend whom she has blocked (their conversation is the one he acts on).
    case blocked
    /// Bea: Olivia's friend who has blocked her (their conversation is the one she acts on).
    case blocker
    /// No token at all.
    case anonymous
}

/// Every route of `SocialRoutes`, each aimed at the fixture resource the matrix is about.
enum SocialEndpoint: String, Sendable, CaseIterable {
    case sendFriendRequest = "POST /friend-requests (to the owner)"
    case listFriendRequests = "GET /friend-requests"
    case acceptFriendRequest = "POST /friend-requests/{id}/accept"
    case declineFriendRequest = "POST /friend-requests/{id}/decline"
    case cancelFriendRequest = "DELETE /friend-requests/{id}"
    case listFriends = "GET /friends"
    case removeFriend = "DELETE /friends/{owner}"
    case listBlocks = "GET /blocks"
    case block = "PUT /blocks/{owner}"
    case unblock = "DELETE /blocks/{owner}"
    case listConversations = "GET /conversations"
    case getConversation = "GET /conversations/{id}"
    case sendMessage = "POST /conversations/{id}/messages"
    case listMessages = "GET /conversations/{id}/messages"
    case markRead = "PUT /conversations/{id}/read"
    case createGroup = "POST /groups (with the owner)"
    case listGroups = "GET /groups"
    case getGroup = "GET /groups/{id}"
    case renameGroup = "PATCH /groups/{id}"
    case dissolveGroup = "DELETE /groups/{id}"
    case addGroupMembers = "POST /groups/{id}/members"
    case removeGroupMember = "DELETE /groups/{id}/members/{member}"
    case leaveGroup = "POST /groups/{id}/leave"
    case sendGroupMessage = "POST /groups/{id}/messages"
    case listGroupMessages = "GET /groups/{id}/messages"
    case markGroupRead = "PUT /groups/{id}/read"

    var isAboutTheFriendRequest: Bool {
        [.sendFriendRequest, .listFriendRequests, .acceptFriendRequest, .declineFriendRequest, .cancelFriendRequest]
            .contains(self)
    }
}

/// What one cell expects.
enum SocialOutcome: Sendable, Equatable {
    case ok, created, noContent
    /// 200, and the list names the row's resource.
    case listed
    /// 200, and the list does not name it.
    case unlisted
    /// 400 `VALIDATION_FAILED`.
    case invalid
    /// 404 `NOT_FOUND`, indistinguishable from the answer for an id that does not exist.
    case invisible
    case forbidden(String)
    case conflict(String)
    /// 401 `UNAUTHORIZED`.
    case unauthorized

    var status: Int {
        switch self {
        case .ok, .listed, .unlisted: 200
        case .created: 201
        case .noContent: 204
        case .invalid: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .invisible: 404
        case .conflict: 409
        }
    }

    var code: String? {
        switch self {
        case .invalid: "VALIDATION_FAILED"
        case .unauthorized: "UNAUTHORIZED"
        case .invisible: "NOT_FOUND"
        case .forbidden(let code), .conflict(let code): code
        case .ok, .created, .noContent, .listed, .unlisted: nil
        }
    }
}

/// One cell of the matrix.
struct SocialMatrixCell: Sendable, CustomTestStringConvertible {
    let endpoint: SocialEndpoint
    let actor: SocialActor
    let expected: SocialOutcome

    var testDescription: String {
        "\(endpoint.rawValue) as \(actor.rawValue) → \(expected.status)\(expected.code.map { " \($0)" } ?? "")"
    }
}

/// The users and resources every cell starts from (built fresh per cell):
/// - Olivia and Max are friends (conversation `conversation`, one message from Max); Olivia owns
///   `group` with Max in it (one message from Max); Fay is Olivia's friend outside the group.
/// - Olivia sent Rita a friend request that is still pending (`requestID`).
/// - Bob is Olivia's friend and she has blocked him (conversation with one message from Bob);
///   Bea is Olivia's friend and has blocked her (conversation with one message from Bea).
/// - Sam knows nobody.
struct SocialMatrixFixture: Sendable {
    let api: SocialClient
    let olivia, max, rita, sam, bob, bea, fay: SocialUser
    var conversationID, bobConversationID, beaConversationID: String
    var messageID, bobMessageID, beaMessageID: String
    var groupID, groupMessageID: String
    var requestID: String

    static func build() async throws -> SocialMatrixFixture {
        let api = SocialClient(try TestApplication())
        let olivia = try await api.register("olivia"), max = try await api.register("max")
        let rita = try await api.register("rita"), sam = try await api.register("sam")
        let bob = try await api.register("bob"), bea = try await api.register("bea"),
            fay = try await api.register("fay")
        let conversationID = try await api.befriend(olivia, max)
        let bobConversationID = try await api.befriend(olivia, bob)
        let beaConversationID = try await api.befriend(bea, olivia)
        _ = try await api.befriend(olivia, fay)
        let messageID = try await api.post("hi Olivia", from: max, toConversation: conversationID)
        let bobMessageID = try await api.post("hi, it's Bob", from: bob, toConversation: bobConversationID)
        let beaMessageID = try await api.post("hi, it's Bea", from: bea, toConversation: beaConversationID)
        let groupID = try await api.createGroup("Climbing", owner: olivia, members: [max])
        let groupMessageID = try await api.post("hello group", from: max, toGroup: groupID)
        try await api.block(bob, by: olivia)
        try await api.block(olivia, by: bea)
        let requestID = try await api.requestFriendship(from: olivia, to: rita)
        return SocialMatrixFixture(
            api: api, olivia: olivia, max: max, rita: rita, sam: sam, bob: bob, bea: bea, fay: fay,
            conversationID: conversationID, bobConversationID: bobConversationID, beaConversationID: beaConversationID,
            messageID: messageID, bobMessageID: bobMessageID, beaMessageID: beaMessageID,
            groupID: groupID, groupMessageID: groupMessageID, requestID: requestID)
    }

    /// The same fixture with every conversation, group, message and request id replaced by
    /// one that does not exist: what a caller who cannot see a resource must not tell apart.
    func withUnknownResources() -> SocialMatrixFixture {
        var copy = self
        for keyPath in [
            \SocialMatrixFixture.conversationID, \.bobConversationID, \.beaConversationID, \.messageID, \.bobMessageID,
            \.beaMessageID, \.groupID, \.groupMessageID, \.requestID,
        ] {
            copy[keyPath: keyPath] = UUID().uuidString.lowercased()
        }
        return copy
    }

    func user(_ actor: SocialActor, for endpoint: SocialEndpoint) -> SocialUser? {
        switch actor {
        case .owner: olivia
        case .member: endpoint.isAboutTheFriendRequest ? rita : max
        case .stranger: sam
        case .blocked: bob
        case .blocker: bea
        case .anonymous: nil
        }
    }

    /// The conversation an actor acts on: Olivia's with Max, or the blocked pair's own.
    func conversation(for actor: SocialActor) -> (id: String, messageID: String) {
        switch actor {
        case .blocked: (bobConversationID, bobMessageID)
        case .blocker: (beaConversationID, beaMessageID)
        default: (conversationID, messageID)
        }
    }

    /// The request for one cell: method, path, body, and (for lists) the id that shows whether
    /// the list names the row's resource.
    func request(
        _ endpoint: SocialEndpoint, as actor: SocialActor
    ) -> (method: String, path: String, body: String, probe: String?) {
        let conversation = conversation(for: actor)
        switch endpoint {
        case .sendFriendRequest: return ("POST", "/friend-requests", #"{"userId":"\#(olivia.id)"}"#, nil)
        case .listFriendRequests: return ("GET", "/friend-requests", "", requestID)
        case .acceptFriendRequest: return ("POST", "/friend-requests/\(requestID)/accept", "", nil)
        case .declineFriendRequest: return ("POST", "/friend-requests/\(requestID)/decline", "", nil)
        case .cancelFriendRequest: return ("DELETE", "/friend-requests/\(requestID)", "", nil)
        // Does the actor's list name the owner (the owner's: Max)?
        case .listFriends: return ("GET", "/friends", "", actor == .owner ? max.id : olivia.id)
        case .removeFriend: return ("DELETE", "/friends/\(olivia.id)", "", nil)
        // Does the actor's list name the owner (the owner's: Bob, whom she blocked)?
        case .listBlocks: return ("GET", "/blocks", "", actor == .owner ? bob.id : olivia.id)
        case .block: return ("PUT", "/blocks/\(olivia.id)", "", nil)
        case .unblock: return ("DELETE", "/blocks/\(olivia.id)", "", nil)
        case .listConversations: return ("GET", "/conversations", "", conversation.id)
        case .getConversation: return ("GET", "/conversations/\(conversation.id)", "", nil)
        case .sendMessage: return ("POST", "/conversations/\(conversation.id)/messages", #"{"text":"ping"}"#, nil)
        case .listMessages: return ("GET", "/conversations/\(conversation.id)/messages", "", nil)
        case .markRead:
            return (
                "PUT", "/conversations/\(conversation.id)/read", #"{"messageId":"\#(conversation.messageID)"}"#, nil
            )
        case .createGroup: return ("POST", "/groups", #"{"name":"Book club","memberIds":["\#(olivia.id)"]}"#, nil)
        case .listGroups: return ("GET", "/groups", "", groupID)
        case .getGroup: return ("GET", "/groups/\(groupID)", "", nil)
        case .renameGroup: return ("PATCH", "/groups/\(groupID)", #"{"name":"Bouldering"}"#, nil)
        case .dissolveGroup: return ("DELETE", "/groups/\(groupID)", "", nil)
        case .addGroupMembers: return ("POST", "/groups/\(groupID)/members", #"{"userIds":["\#(fay.id)"]}"#, nil)
        case .removeGroupMember: return ("DELETE", "/groups/\(groupID)/members/\(max.id)", "", nil)
        case .leaveGroup: return ("POST", "/groups/\(groupID)/leave", "", nil)
        case .sendGroupMessage: return ("POST", "/groups/\(groupID)/messages", #"{"text":"ping"}"#, nil)
        case .listGroupMessages: return ("GET", "/groups/\(groupID)/messages", "", nil)
        case .markGroupRead: return ("PUT", "/groups/\(groupID)/read", #"{"messageId":"\#(groupMessageID)"}"#, nil)
        }
    }

    func perform(_ endpoint: SocialEndpoint, as actor: SocialActor) async -> (HTTPResponse, probe: String?) {
        let (method, path, body, probe) = request(endpoint, as: actor)
        return (await api.call(user(actor, for: endpoint), method, path, body), probe)
    }

    func close() { api.app.close() }
}

@Suite("Social authorization matrix", .timeLimit(.minutes(3)))
struct SocialAuthorizationMatrixTests {
    /// One line per endpoint; columns owner, member, stranger, blocked, blocker. Without a token
    /// every endpoint is 401.
    static let table: [(SocialEndpoint, [SocialOutcome])] = [
        //                       owner                            member                         stranger                   blocked                blocker
        (
            .sendFriendRequest,
            [
                .conflict("CANNOT_BEFRIEND_SELF"), .conflict("REQUEST_PENDING"), .created, .forbidden("BLOCKED"),
                .forbidden("BLOCKED"),
            ]
        ),
        (.listFriendRequests, [.listed, .listed, .unlisted, .unlisted, .unlisted]),
        (.acceptFriendRequest, [.forbidden("FORBIDDEN"), .ok, .invisible, .invisible, .invisible]),
        (.declineFriendRequest, [.forbidden("FORBIDDEN"), .ok, .invisible, .invisible, .invisible]),
        (.cancelFriendRequest, [.noContent, .forbidden("FORBIDDEN"), .invisible, .invisible, .invisible]),
        (.listFriends, [.listed, .listed, .unlisted, .listed, .listed]),
        (.removeFriend, [.invisible, .noContent, .invisible, .noContent, .noContent]),
        (.listBlocks, [.listed, .unlisted, .unlisted, .unlisted, .listed]),
        (.block, [.conflict("CANNOT_BLOCK_SELF"), .ok, .ok, .ok, .ok]),
        (.unblock, [.noContent, .noContent, .noContent, .noContent, .noContent]),
        (.listConversations, [.listed, .listed, .unlisted, .listed, .listed]),
        (.getConversation, [.ok, .ok, .invisible, .ok, .ok]),
        (.sendMessage, [.created, .created, .invisible, .forbidden("BLOCKED"), .forbidden("BLOCKED")]),
        (.listMessages, [.ok, .ok, .invisible, .ok, .ok]),
        (.markRead, [.ok, .ok, .invisible, .ok, .ok]),
        (.createGroup, [.created, .created, .forbidden("NOT_FRIENDS"), .forbidden("BLOCKED"), .forbidden("BLOCKED")]),
        (.listGroups, [.listed, .listed, .unlisted, .unlisted, .unlisted]),
        (.getGroup, [.ok, .ok, .invisible, .invisible, .invisible]),
        (.renameGroup, [.ok, .forbidden("NOT_GROUP_OWNER"), .invisible, .invisible, .invisible]),
        (.dissolveGroup, [.noContent, .forbidden("NOT_GROUP_OWNER"), .invisible, .invisible, .invisible]),
        (.addGroupMembers, [.ok, .forbidden("NOT_GROUP_OWNER"), .invisible, .invisible, .invisible]),
        (.removeGroupMember, [.noContent, .forbidden("NOT_GROUP_OWNER"), .invisible, .invisible, .invisible]),
        (.leaveGroup, [.conflict("OWNER_CANNOT_LEAVE"), .noContent, .invisible, .invisible, .invisible]),
        (.sendGroupMessage, [.created, .created, .invisible, .invisible, .invisible]),
        (.listGroupMessages, [.ok, .ok, .invisible, .invisible, .invisible]),
        (.markGroupRead, [.ok, .ok, .invisible, .invisible, .invisible]),
    ]

    static let cells: [SocialMatrixCell] = table.flatMap { endpoint, outcomes in
        zip([SocialActor.owner, .member, .stranger, .blocked, .blocker], outcomes).map {
            SocialMatrixCell(endpoint: endpoint, actor: $0, expected: $1)
        } + [SocialMatrixCell(endpoint: endpoint, actor: .anonymous, expected: .unauthorized)]
    }

    @Test func tableCoversEveryRouteAndEveryActor() throws {
        let app = try TestApplication()
        defer { app.close() }
        // Live-location and scheduled-call routes live under the same paths; their matrices are
        // LiveLocationTests' and ScheduledCallTests'.
        let social = Set(
            app.application.router.routes.filter { route in
                ["/friend", "/blocks", "/conversations", "/groups"].contains { route.pattern.hasPrefix($0) }
                    && !route.pattern.hasSuffix("/live-locations") && !route.pattern.contains("/scheduled-calls")
            }.map { "\($0.method) \($0.pattern)" })
        #expect(social.count == SocialEndpoint.allCases.count)
        #expect(Self.table.map(\.0) == SocialEndpoint.allCases)
        for (endpoint, outcomes) in Self.table { #expect(outcomes.count == 5, "\(endpoint.rawValue)") }
    }

    @Test(arguments: cells)
    func cell(_ cell: SocialMatrixCell) async throws {
        let fixture = try await SocialMatrixFixture.build()
        defer { fixture.close() }
        let (response, probe) = await fixture.perform(cell.endpoint, as: cell.actor)
        #expect(response.status == cell.expected.status, "\(response.text)")
        #expect(response.apiErrorCode == cell.expected.code, "\(response.text)")
        switch cell.expected {
        case .listed:
            #expect(response.text.contains(try #require(probe)), "the list should name \(probe ?? "")")
        case .unlisted:
            #expect(!response.text.contains(try #require(probe)), "the list must not name \(probe ?? "")")
        case .invisible:
            // A resource the caller cannot see answers exactly like one that does not exist.
            let (ghost, _) = await fixture.withUnknownResources().perform(cell.endpoint, as: cell.actor)
            #expect(ghost.status == 404)
            #expect(ghost.apiErrorMessage == response.apiErrorMessage)
        default:
            break
        }
    }

    /// An ended session is as good as no token on every social route.
    @Test func loggedOutTokenIs401Everywhere() async throws {
        let fixture = try await SocialMatrixFixture.build()
        defer { fixture.close() }
        #expect(await fixture.api.call(fixture.olivia, "POST", "/auth/logout").status == 204)
        for endpoint in SocialEndpoint.allCases {
            let (response, _) = await fixture.perform(endpoint, as: .owner)
            #expect(response.status == 401, "\(endpoint.rawValue): \(response.text)")
            #expect(response.apiErrorCode == "UNAUTHORIZED", "\(endpoint.rawValue)")
        }
    }
}
