import Foundation
import Synchronization
@testable import SwitchboardHTTP
@testable import SwitchboardPush
@testable import SwitchboardServer
import SwitchboardWire

/// A clock the call tests move by hand; sleepers on it (the push dispatcher) wake when it is
/// moved past their moment, never in real time.
final class CallTestClock: Sendable {
    private struct State {
        var now = Date(timeIntervalSince1970: 1_800_000_000)
        var sleepers: [UInt64: (until: Date, loop: String?, continuation: CheckedContinuation<Void, any Error>)] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    var now: Date { state.withLock { $0.now } }
    /// Tasks sleeping on this clock now.
    var sleeperCount: Int { state.withLock { $0.sleepers.count } }
    /// Tasks of the background loop `name` (`BackgroundLoop.name`) sleeping on this clock now.
    func sleeperCount(of name: String) -> Int { state.withLock { $0.sleepers.values.filter { $0.loop == name }.count } }

    func advance(seconds: Double) {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.now = state.now.addingTimeInterval(seconds)
            let now = state.now
            let ready = state.sleepers.filter { $0.value.until <= now }
            for id in ready.keys { state.sleepers[id] = nil }
            return ready.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Suspends until the clock reads `moment`; throws `CancellationError` when cancelled.
    @Sendable func sleep(until moment: Date) async throws {
        let loop = BackgroundLoop.name
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let result = state.withLock { state -> Result<Void, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.now >= moment { return .success(()) }
                    state.sleepers[id] = (moment, loop, continuation)
                    return nil
                }
                if let result { continuation.resume(with: result) }
            }
        } onCancel: {
            let continuation = state.withLock { $0.sleepers.removeValue(forKey: id)?.continuation }
            continuation?.resume(throwing: CancellationError())
        }
    }

    /// The environment of an application on this clock.
    var environment: ServerEnvironment {
        ServerEnvironment(
            now: { self.now }, newID: { UUID().uuidString.lowercased() },
            sleepUntil: { try await self.sleep(until: $0) })
    }
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

    init(
        configuration: ServerConfiguration = ServerConfiguration(), apnsTransport: (any PushTransport)? = nil,
        fcmTransport: (any PushTransport)? = nil, huaweiTransport: (any PushTransport)? = nil,
        vendorTransports: [String: any PushTransport] = [:], store: StoreKind = .default, asShipped: Bool = false
    ) throws {
        let clock = CallTestClock()
        self.clock = clock
        app = try TestApplication(
            configuration: configuration, environment: clock.environment,
            apnsTransport: apnsTransport, fcmTransport: fcmTransport, huaweiTransport: huaweiTransport,
            vendorTransports: vendorTransports, pushJitter: { 0.5 }, store: store, asShipped: asShipped)
    }

    func person(_ name: String) async throws -> Person {
        let response = await app.request(
            "POST", "/auth/register",
            body: #"{"username":"\#(name)","password":"long enough","displayName":"\#(name)"}"#)
        let session = try JSONDecoder().decode(AuthSession.self, from: Data(response.bodyBytes))
        return Person(token: session.token, id: session.user.id)
    }

    /// Makes them friends; returns their conversation id.
    func befriend(_ a: Person, _ b: Person) async throws -> String {
        let request = await app.request("POST", "/friend-requests", headers: a.headers, body: #"{"userId":"\#(b.id)"}"#)
        guard let id = request.json?["id"] as? String else {
            throw TestFailure("friend request failed: \(request.text)")
        }
        let accepted = await app.request("POST", "/friend-requests/\(id)/accept", headers: b.headers)
        guard let conversation = accepted.json?["conversationId"] as? String else {
            throw TestFailure("accept failed: \(accepted.text)")
        }
        return conversation
    }

    /// A group owned by `owner` with `members` (befriended first).
    func group(_ owner: Person, _ members: [Person]) async throws -> String {
        for member in members {
            let friends = await app.request("GET", "/friends", headers: owner.headers).text
            if !friends.contains(member.id) { _ = try await befriend(owner, member) }
        }
        let ids = members.map { "\"\($0.id)\"" }.joined(separator: ",")
        let response = await app.request(
            "POST", "/groups", headers: owner.headers, body: #"{"name":"team","memberIds":[\#(ids)]}"#)
        guard let id = response.json?["id"] as? String else { throw TestFailure("group failed: \(response.text)") }
        return id
    }

    func call(
        _ caller: Person, _ kind: String, _ scope: String, mode: String = "audio", clientID: String = UUID().uuidString
    ) async -> HTTPResponse {
        await app.request(
            "POST", "/calls", headers: caller.headers,
            body: #"{"scopeKind":"\#(kind)","scopeId":"\#(scope)","mode":"\#(mode)","clientId":"\#(clientID)"}"#)
    }

    func act(_ action: String, _ callID: String, by person: Person, body: String? = nil) async -> HTTPResponse {
        if let body {
            return await app.request("POST", "/calls/\(callID)/\(action)", headers: person.headers, body: body)
        }
        return await app.request("POST", "/calls/\(callID)/\(action)", headers: person.headers)
    }

    func get(_ callID: String, by person: Person) async throws -> CallInfo {
        try JSONDecoder().decode(
            CallInfo.self, from: Data(await app.request("GET", "/calls/\(callID)", headers: person.headers).bodyBytes))
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
