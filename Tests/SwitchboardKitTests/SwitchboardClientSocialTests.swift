import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
import SwitchboardKit

/// Answers each request with the next body and writes down what was sent.
private final class SocialScriptTransport: HTTPTransport {
    private let state: Mutex<(bodies: [String], sent: [String])>

    init(bodies: [String]) { state = Mutex((bodies, [])) }

    var sent: [String] { state.withLock { $0.sent } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await send(request, repeatable: false)
    }

    func send(_ request: URLRequest, repeatable: Bool) async throws -> (Data, HTTPURLResponse) {
        let url = request.url!
        let body = String(decoding: request.httpBody ?? Data(), as: UTF8.self)
        let answer = state.withLock { state -> String in
            let path = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
            state.sent.append("\(request.httpMethod ?? "GET") \(path)" + (body.isEmpty ? "" : " \(body)"))
            return state.bodies.isEmpty ? "" : state.bodies.removeFirst()
        }
        let status = answer.isEmpty ? 204 : 200
        return (
            Data(answer.utf8),
            HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: nil)!
        )
    }
}

/// The social graph calls of a contacts screen: their requests, and the answers decoded.
@Suite("SwitchboardClient: social graph", .timeLimit(.minutes(1)))
struct SwitchboardClientSocialTests {
    static let alice = #"{"id":"u1","username":"alice","displayName":"Alice"}"#
    static let bob = #"{"id":"u 2","username":"bob","displayName":"Bob"}"#
    static let request =
        #"{"id":"r/1","from":\#(Self.alice),"to":\#(Self.bob),"state":"pending","createdAt":"t","updatedAt":"t"}"#

    @Test func readsAndChangesTheGraph() async throws {
        let transport = SocialScriptTransport(bodies: [
            #"[{"user":\#(Self.bob),"conversationId":"c1","since":"t"}]"#,
            #"{"incoming":[\#(Self.request)],"outgoing":[]}"#,
            #"[{"id":"g1","name":"Team","ownerId":"u1","createdAt":"t","members":[],"readMarkers":[]}]"#,
            Self.request, Self.request, "", "",
        ])
        let client = SwitchboardClient(
            baseURL: URL(string: "http://switchboard.test/sb")!, token: "t", transport: transport,
            eventTransport: transport)

        let friends = try await client.friends()
        #expect(friends.map(\.conversationId) == ["c1"] && friends.first?.user.username == "bob")
        let requests = try await client.friendRequests()
        #expect(requests.incoming.map(\.id) == ["r/1"] && requests.outgoing.isEmpty)
        let groups = try await client.groups()
        #expect(groups.map(\.name) == ["Team"])
        let sent = try await client.sendFriendRequest(toUsername: "bob")
        #expect(sent.to.displayName == "Bob")
        _ = try await client.declineFriendRequest("r/1")
        try await client.cancelFriendRequest("r/1")
        try await client.removeFriend(userID: "u 2")

        // Ids are percent-encoded in the path, under the base URL's prefix.
        #expect(
            transport.sent == [
                "GET /sb/friends",
                "GET /sb/friend-requests",
                "GET /sb/groups",
                #"POST /sb/friend-requests {"username":"bob"}"#,
                "POST /sb/friend-requests/r%2F1/decline",
                "DELETE /sb/friend-requests/r%2F1",
                "DELETE /sb/friends/u%202",
            ])
    }
}
