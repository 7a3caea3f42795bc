import Foundation
import Testing
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardWire

/// Friend requests, friendships, blocks and the event feed, as two or three clients see them.
@Suite("Social behaviour: friends, blocks, events", .timeLimit(.minutes(3)))
struct SocialBehaviourTests {
    /// A fresh application with registered users.
    private static func world(_ names: String...) async throws -> (SocialClient, [SocialUser]) {
        let api = SocialClient(try TestApplication())
        var users: [SocialUser] = []
        for name in names { users.append(try await api.register(name)) }
        return (api, users)
    }

    // MARK: Friend requests

    @Test func sendingARequestTellsBothAndListsIt() async throws {
        let (api, users) = try await Self.world("olivia", "max")
        defer { api.app.close() }
        let (olivia, max) = (users[0], users[1])
        let response = await api.call(olivia, "POST", "/friend-requests", #"{"username":"Max"}"#)
        #expect(response.status == 201)
        let request = try response.decoded(FriendRequest.self)
        #expect(request.from.id == olivia.id && request.to.id == max.id && request.state == .pending)
        try await api.expectEvents([EventKind.friendRequest], for: [olivia, max])

        let maxView = try await api.call(max, "GET", "/friend-requests").decoded(FriendRequestList.self)
        #expect(maxView.incoming.map(\.id) == [request.id] && maxView.outgoing.isEmpty)
        let oliviaView = try await api.call(olivia, "GET", "/friend-requests").decoded(FriendRequestList.self)
        #expect(oliviaView.outgoing.map(\.id) == [request.id] && oliviaView.incoming.isEmpty)
    }

    /// A second request between the same two is refused whoever sends it.
    @Test(arguments: [false, true])
    func duplicateRequestIsPending(fromTheRecipient: Bool) async throws {
        let (api, users) = try await Self.world("olivia", "max")
        defer { api.app.close() }
        let (olivia, max) = (users[0], users[1])
        _ = try await api.requestFriendship(from: olivia, to: max)
        try await api.skipEvents(of: olivia, max)
        let (sender, target) = fromTheRecipient ? (max, olivia) : (olivia, max)
        let response = await api.call(sender, "POST", "/friend-requests", #"{"userId":"\#(target.id)"}"#)
        #expect(response.status == 409)
        #expect(response.apiErrorCode == "REQUEST_PENDING")
        try await api.expectEvents([], for: [olivia, max])
        let list = try await api.call(olivia, "GET", "/friend-requests").decoded(FriendRequestList.self)
        #expect(list.outgoing.count == 1 && list.incoming.isEmpty)
    }

    @Test(arguments: [
        (#"{"userId":"SELF"}"#, 409, "CANNOT_BEFRIEND_SELF"),
        (#"{"username":"OLIVIA"}"#, 409, "CANNOT_BEFRIEND_SELF"),
        (#"{"userId":"00000000-0000-0000-0000-000000000000"}"#, 404, "NOT_FOUND"),
        (#"{"username":"nobody"}"#, 404, "NOT_FOUND"),
        (#"{"username":"max","userId":"SELF"}"#, 400, "VALIDATION_FAILED"),
        (#"{}"#, 400, "VALIDATION_FAILED"),
    ])
    func badRequestTargetsAreRefused(body: String, status: Int, code: String) async throws {
        let (api, users) = try await Self.world("olivia", "max")
        defer { api.app.close() }
        let olivia = users[0]
        let response = await api.call(
            olivia, "POST", "/friend-requests", body.replacingOccurrences(of: "SELF", with: olivia.id))
        #expect(response.status == status, "\(response.text)")
        #expect(response.apiErrorCode == code)
        try await api.expectEvents([], for: users)
    }

    @Test func acceptingCreatesTheFriendshipAndTheConversation() async throws {
        let (api, users) = try await Self.world("olivia", "max")
        defer { api.app.close() }
        let (olivia, max) = (users[0], users[1])
        let requestID = try await api.requestFriendship(from: olivia, to: max)
        try await api.skipEvents(of: olivia, max)

        let response = await api.call(max, "POST", "/friend-requests/\(requestID)/accept")
        #expect(response.status == 200)
        let friend = try response.decoded(Friend.self)
        #expect(friend.user.id == olivia.id)
        let events = try await api.expectEvents([EventKind.friendAccepted], for: [olivia, max])
        #expect(events.allSatisfy { $0.conversationId == friend.conversationId })

        for (user, other) in [(olivia, max), (max, olivia)] {
            let friends = try await api.call(user, "GET", "/friends").decoded([Friend].self)
            #expect(friends.map(\.user.id) == [other.id] && friends.map(\.conversationId) == [friend.conversationId])
            let conversation = try await api.conversation(friend.conversationId, as: user)
            #expect(conversation.peer.id == other.id && conversation.isFriend && conversation.canInteract)
            let pending = try await api.call(user, "GET", "/friend-requests").decoded(FriendRequestList.self)
            #expect(pending.incoming.isEmpty && pending.outgoing.isEmpty)
        }
        let again = await api.call(max, "POST", "/friend-requests/\(requestID)/accept")
        #expect(again.status == 409)
        #expect(again.apiErrorCode == "REQUEST_NOT_PENDING")
        try await api.expectEvents([], for: [olivia, max])
    }

    /// The recipient declines or the sender cancels: the request is gone for both, both are
    /// told, nobody became friends, and a new request may be sent.
    @Test(arguments: ["decline", "cancel"])
    func decliningOrCancellingSettlesTheRequest(action: String) async throws {
        let (api, users) = try await Self.world("olivia", "max")
        defer { api.app.close() }
        let (olivia, max) = (users[0], users[1])
        let requestID = try await api.requestFriendship(from: olivia, to: max)
        try await api.skipEvents(of: olivia, max)

        let response =
            action == "decline"
            ? await api.call(max, "POST", "/friend-requests/\(requestID)/decline")
            : await api.call(olivia, "DELETE", "/friend-requests/\(requestID)")
        if action == "decline" {
            #expect(response.status == 200)
            #expect(try response.decoded(FriendRequest.self).state == .declined)
        } else {
            #expect(response.status == 204)
        }
        try await api.expectEvents([EventKind.friendRequest], for: [olivia, max])
        for user in [olivia, max] {
            let pending = try await api.call(user, "GET", "/friend-requests").decoded(FriendRequestList.self)
            #expect(pending.incoming.isEmpty && pending.outgoing.isEmpty)
            #expect(try await api.call(user, "GET", "/friends").decoded([Friend].self).isEmpty)
        }
        let late = await api.call(max, "POST", "/friend-requests/\(requestID)/accept")
        #expect(late.status == 409)
        #expect(late.apiErrorCode == "REQUEST_NOT_PENDING")
        #expect(await api.call(olivia, "POST", "/friend-requests", #"{"userId":"\#(max.id)"}"#).status == 201)
    }

    @Test(arguments: [false, true])
    func friendsCannotRequestAgain(fromTheAccepter: Bool) async throws {
        let (api, users) = try await Self.world("olivia", "max")
        defer { api.app.close() }
        let (olivia, max) = (users[0], users[1])
        _ = try await api.befriend(olivia, max)
        let (sender, target) = fromTheAccepter ? (max, olivia) : (olivia, max)
        let response = await api.call(sender, "POST", "/friend-requests", #"{"userId":"\#(target.id)"}"#)
        #expect(response.status == 409)
        #expect(response.apiErrorCode == "ALREADY_FRIENDS")
    }

    // MARK: Removing a friend

    @Test func removingAFriendKeepsTheHistoryAndReusesTheConversation() async throws {
        let (api, users) = try await Self.world("olivia", "max")
        defer { api.app.close() }
        let (olivia, max) = (users[0], users[1])
        let conversationID = try await api.befriend(olivia, max)
        let messageID = try await api.post("see you", from: max, toConversation: conversationID)
        try await api.skipEvents(of: olivia, max)

        #expect(await api.call(olivia, "DELETE", "/friends/\(max.id)").status == 204)
        let events = try await api.expectEvents([EventKind.friendRemoved], for: [olivia, max])
        #expect(events.allSatisfy { $0.conversationId == conversationID })
        for (user, other) in [(olivia, max), (max, olivia)] {
            #expect(try await api.call(user, "GET", "/friends").decoded([Friend].self).isEmpty)
            let conversation = try await api.conversation(conversationID, as: user)
            #expect(!conversation.isFriend && !conversation.canInteract)
            let history = try await api.messages("/conversations/\(conversationID)/messages", as: user)
            #expect(history.messages.map(\.id) == [messageID])
            let send = await api.send("still there?", from: user, toConversation: conversationID)
            #expect(send.status == 403)
            #expect(send.apiErrorCode == "NOT_FRIENDS")
            #expect(await api.call(user, "DELETE", "/friends/\(other.id)").status == 404)
        }
        try await api.expectEvents([], for: [olivia, max])

        #expect(try await api.befriend(max, olivia) == conversationID)
        let history = try await api.messages("/conversations/\(conversationID)/messages", as: olivia)
        #expect(history.messages.map(\.id) == [messageID])
        #expect(await api.send("welcome back", from: olivia, toConversation: conversationID).status == 201)
        let list = try await api.call(olivia, "GET", "/conversations").decoded([Conversation].self)
        #expect(list.map(\.id) == [conversationID])
    }

    // MARK: Blocking

    @Test(arguments: [false, true])
    func blockingStopsNewInteractionButKeepsHistory(theOtherSideBlocks: Bool) async throws {
        let (api, users) = try await Self.world("olivia", "max")
        defer { api.app.close() }
        let (olivia, max) = (users[0], users[1])
        let conversationID = try await api.befriend(olivia, max)
        let messageID = try await api.post("hello", from: olivia, toConversation: conversationID)
        try await api.skipEvents(of: olivia, max)
        let (blocker, blocked) = theOtherSideBlocks ? (max, olivia) : (olivia, max)

        let response = await api.call(blocker, "PUT", "/blocks/\(blocked.id)")
        #expect(response.status == 200)
        #expect(try response.decoded(Block.self).user.id == blocked.id)
        let events = try await api.expectEvents([EventKind.blockChanged], for: [olivia, max])
        #expect(events.allSatisfy { $0.conversationId == conversationID })
        #expect(try await api.call(blocker, "GET", "/blocks").decoded([Block].self).map(\.user.id) == [blocked.id])
        #expect(try await api.call(blocked, "GET", "/blocks").decoded([Block].self).isEmpty)

        for user in [olivia, max] {
            let send = await api.send("are you there?", from: user, toConversation: conversationID)
            #expect(send.status == 403)
            #expect(send.apiErrorCode == "BLOCKED")
            let conversation = try await api.conversation(conversationID, as: user)
            #expect(conversation.isFriend && !conversation.canInteract)
            let history = try await api.messages("/conversations/\(conversationID)/messages", as: user)
            #expect(history.messages.map(\.id) == [messageID])
        }
        try await api.expectEvents([], for: [olivia, max])

        #expect(await api.call(blocker, "DELETE", "/blocks/\(blocked.id)").status == 204)
        try await api.expectEvents([EventKind.blockChanged], for: [olivia, max])
        #expect(try await api.conversation(conversationID, as: blocked).canInteract)
        #expect(await api.send("back again", from: blocked, toConversation: conversationID).status == 201)
    }

    /// Blocking cancels a pending request whichever side of it the blocker is on, and lifting
    /// the block does not revive it. Both request lists changed, so both clients get the
    /// signal that refreshes them (`friend_request`) besides `block_changed`.
    @Test(arguments: [false, true])
    func blockingCancelsPendingRequests(recipientBlocks: Bool) async throws {
        let (api, users) = try await Self.world("olivia", "rita")
        defer { api.app.close() }
        let (olivia, rita) = (users[0], users[1])
        let requestID = try await api.requestFriendship(from: olivia, to: rita)
        try await api.skipEvents(of: olivia, rita)
        let (blocker, blocked) = recipientBlocks ? (rita, olivia) : (olivia, rita)
        try await api.block(blocked, by: blocker)
        for user in [olivia, rita] {
            let pending = try await api.call(user, "GET", "/friend-requests").decoded(FriendRequestList.self)
            #expect(pending.incoming.isEmpty && pending.outgoing.isEmpty)
            let kinds = try await api.events(of: user).kinds
            #expect(
                kinds.map(\.rawValue).sorted() == [EventKind.blockChanged.rawValue, EventKind.friendRequest.rawValue],
                "events of \(user.username)")
        }
        let again = await api.call(blocked, "POST", "/friend-requests", #"{"userId":"\#(blocker.id)"}"#)
        #expect(again.status == 403)
        #expect(again.apiErrorCode == "BLOCKED")

        #expect(await api.call(blocker, "DELETE", "/blocks/\(blocked.id)").status == 204)
        let accept = await api.call(rita, "POST", "/friend-requests/\(requestID)/accept")
        #expect(accept.status == 409)
        #expect(accept.apiErrorCode == "REQUEST_NOT_PENDING")
    }

    @Test func blockingAndUnblockingTwiceTellsOnce() async throws {
        let (api, users) = try await Self.world("olivia", "max")
        defer { api.app.close() }
        let (olivia, max) = (users[0], users[1])
        let first = await api.call(olivia, "PUT", "/blocks/\(max.id)")
        let second = await api.call(olivia, "PUT", "/blocks/\(max.id)")
        #expect(first.status == 200 && second.status == 200)
        #expect(try first.decoded(Block.self) == second.decoded(Block.self))
        try await api.expectEvents([EventKind.blockChanged], for: [olivia, max])
        #expect(try await api.call(olivia, "GET", "/blocks").decoded([Block].self).count == 1)

        #expect(await api.call(olivia, "DELETE", "/blocks/\(max.id)").status == 204)
        #expect(await api.call(olivia, "DELETE", "/blocks/\(max.id)").status == 204)
        try await api.expectEvents([EventKind.blockChanged], for: [olivia, max])
        #expect(try await api.call(olivia, "GET", "/blocks").decoded([Block].self).isEmpty)
    }

    /// Only the blocker lifts a block: the blocked user's DELETE changes nothing.
    @Test func theBlockedUserCannotLiftTheBlock() async throws {
        let (api, users) = try await Self.world("olivia", "max")
        defer { api.app.close() }
        let (olivia, max) = (users[0], users[1])
        let conversationID = try await api.befriend(olivia, max)
        try await api.block(max, by: olivia)
        try await api.skipEvents(of: olivia, max)
        #expect(await api.call(max, "DELETE", "/blocks/\(olivia.id)").status == 204)
        try await api.expectEvents([], for: [olivia, max])
        #expect(await api.send("let me in", from: max, toConversation: conversationID).apiErrorCode == "BLOCKED")
        #expect(try await api.call(olivia, "GET", "/blocks").decoded([Block].self).map(\.user.id) == [max.id])
    }

    @Test(arguments: [("PUT", "SELF", 409), ("PUT", "UNKNOWN", 404), ("DELETE", "UNKNOWN", 404)])
    func blockTargetsAreChecked(method: String, target: String, status: Int) async throws {
        let (api, users) = try await Self.world("olivia")
        defer { api.app.close() }
        let olivia = users[0]
        let id = target == "SELF" ? olivia.id : "00000000-0000-0000-0000-000000000000"
        let response = await api.call(olivia, method, "/blocks/\(id)")
        #expect(response.status == status)
        #expect(try await api.call(olivia, "GET", "/blocks").decoded([Block].self).isEmpty)
        try await api.expectEvents([], for: [olivia])
    }

    // MARK: Events

    /// Two unrelated pairs act in turn: every user's feed ascends, the ids of consecutive actions
    /// ascend across users, and nobody sees anything of the other pair.
    @Test func eventIdsIncreaseGloballyAndEachUserSeesOnlyTheirOwn() async throws {
        let (api, users) = try await Self.world("olivia", "max", "sam", "rita")
        defer { api.app.close() }
        let (olivia, max, sam, rita) = (users[0], users[1], users[2], users[3])
        let first = try await api.befriend(olivia, max)
        let second = try await api.befriend(sam, rita)
        for round in 1...3 {
            _ = try await api.post("round \(round)", from: olivia, toConversation: first)
            _ = try await api.post("round \(round)", from: rita, toConversation: second)
        }
        var feeds: [String: [Event]] = [:]
        for user in users { feeds[user.id] = try await api.events(of: user) }
        for user in users {
            let ids = try #require(feeds[user.id]).map(\.id)
            #expect(ids == ids.sorted() && Set(ids).count == ids.count, "\(user.username)")
            #expect(ids.count == 5, "request, accepted and three messages for \(user.username)")
        }
        for (pair, conversation) in [([olivia, max], first), ([sam, rita], second)] {
            for user in pair {
                let references = Set(try #require(feeds[user.id]).compactMap(\.conversationId))
                #expect(references == [conversation], "\(user.username) sees only their conversation")
            }
        }
        // The message events alternate between the pairs in the order they were sent.
        let oliviaMessages = try #require(feeds[olivia.id]).filter { $0.kind == EventKind.message }.map(\.id)
        let ritaMessages = try #require(feeds[rita.id]).filter { $0.kind == EventKind.message }.map(\.id)
        for round in 0..<3 {
            #expect(oliviaMessages[round] < ritaMessages[round])
            if round < 2 { #expect(ritaMessages[round] < oliviaMessages[round + 1]) }
        }
        // A fresh snapshot's cursor is the newest event of that user.
        let me = try await api.call(max, "GET", "/me").decoded(Me.self)
        #expect(me.eventCursor == feeds[max.id]?.last?.id)
    }
}
