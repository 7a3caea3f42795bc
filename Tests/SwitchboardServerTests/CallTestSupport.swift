import Foundation
import Synchronization
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardWire

/// A clock the call tests move by hand.
final class CallTestClock: Sendable {
    private let value = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { value.withLock { $0 } }
    func advance(seconds: Double) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// Users, friendships and groups over an in-process application, for the call tests.
struct CallWorld {
    struct Person {
        let token: String
        let id: String
        var headers: HTTPHeaders { ["Host": "t", "Authorization": "Bearer \(token)"] }
    }

    let app: TestApplication
    let clock: CallTestClock

    init(configuration: ServerConfiguration = ServerConfiguration(), pushProvider: (any PushProvider)? = nil) throws {
        let clock = CallTestClock()
        self.clock = clock
        app = try TestApplication(
            configuration: configuration, environment: ServerEnvironment(now: { clock.now }, newID: { UUID().uuidString.lowercased() }),
            pushProvider: pushProvider, pushJitter: { 0.5 })
    }

    func person(_ name: String) async throws -> Person {
        let response = await app.request("POST", "/auth/register", body: #"{"username":"\#(name)","password":"long enough","displayName":"\#(name)"}"#)
        let session = try JSONDecoder().decode(AuthSession.self, from: Data(response.bodyBytes))
        return Person(token: session.token, id: session.user.id)
    }

    /// Makes them friends; returns their conversation id.
    func befriend(_ a: Person, _ b: Person) async throws -> String {
        let request = await app.request("POST", "/friend-requests", headers: a.headers, body: #"{"userId":"\#(b.id)"}"#)
        guard let id = request.json?["id"] as? String else { throw TestFailure("friend request failed: \(request.text)") }
        let accepted = await app.request("POST", "/friend-requests/\(id)/accept", headers: b.headers)
        guard let conversation = accepted.json?["conversationId"] as? String else { throw TestFailure("accept failed: \(accepted.text)") }
        return conversation
    }

    /// A group owned by `owner` with `members` (befriended first).
    func group(_ owner: Person, _ members: [Person]) async throws -> String {
        for member in members {
            let friends = await app.request("GET", "/friends", headers: owner.headers).text
            if !friends.contains(member.id) { _ = try await befriend(owner, member) }
        }
        let ids = members.map { "\"\($0.id)\"" }.joined(separator: ",")
        let response = await app.request("POST", "/groups", headers: owner.headers, body: #"{"name":"team","memberIds":[\#(ids)]}"#)
        guard let id = response.json?["id"] as? String else { throw TestFailure("group failed: \(response.text)") }
        return id
    }

    func call(_ caller: Person, _ kind: String, _ scope: String, mode: String = "audio", clientID: String = UUID().uuidString) async -> HTTPResponse {
        await app.request(
            "POST", "/calls", headers: caller.headers,
            body: #"{"scopeKind":"\#(kind)","scopeId":"\#(scope)","mode":"\#(mode)","clientId":"\#(clientID)"}"#)
    }

    func act(_ action: String, _ callID: String, by person: Person) async -> HTTPResponse {
        await app.request("POST", "/calls/\(callID)/\(action)", headers: person.headers)
    }

    func get(_ callID: String, by person: Person) async throws -> CallInfo {
        try JSONDecoder().decode(CallInfo.self, from: Data(await app.request("GET", "/calls/\(callID)", headers: person.headers).bodyBytes))
    }

    /// The kinds and call ids of a person's events after `after`.
    func events(of person: Person, after: Int64 = 0) async throws -> [Event] {
        let response = await app.request("GET", "/events?after=\(after)&wait=0", headers: person.headers)
        return try JSONDecoder().decode(EventsPage.self, from: Data(response.bodyBytes)).events
    }

    func close() { app.close() }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension HTTPResponse {
    var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
    var call: CallInfo? { try? JSONDecoder().decode(CallInfo.self, from: Data(bodyBytes)) }
}
