import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
import SwitchboardKit

/// Answers every request at once with `body` and writes down what was sent.
private final class RecordingTransport: HTTPTransport {
    struct Sent: Sendable {
        let line: String
        let timeout: TimeInterval
        let repeatable: Bool
        /// Copies asked for through `sendHeld` (0: `send`).
        var heldCopies = 0
    }

    private let sent = Mutex<[Sent]>([])
    private let body: Data

    init(body: String) { self.body = Data(body.utf8) }

    var requests: [Sent] { sent.withLock { $0 } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await send(request, repeatable: false)
    }

    func sendHeld(_ request: URLRequest, copies: Int) async throws -> (Data, HTTPURLResponse) {
        let answer = try await send(request, repeatable: false)
        sent.withLock { $0[$0.count - 1].heldCopies = copies }
        return answer
    }

    func send(_ request: URLRequest, repeatable: Bool) async throws -> (Data, HTTPURLResponse) {
        let url = request.url!
        let parts = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let target = (parts?.percentEncodedPath ?? "") + (parts?.percentEncodedQuery.map { "?" + $0 } ?? "")
        sent.withLock {
            $0.append(
                Sent(
                    line: "\(request.httpMethod ?? "GET") \(target)", timeout: request.timeoutInterval,
                    repeatable: repeatable))
        }
        return (
            body,
            HTTPURLResponse(
                url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Content-Type": "application/json"])!
        )
    }
}

/// Which connections `SwitchboardClient` sends a request on, and in which form.
@Suite("SwitchboardClient: requests and their connections", .timeLimit(.minutes(1)))
struct SwitchboardClientRoutingTests {
    static let token = #"{"url":"wss://media.example","token":"jwt","expiresAt":"2026-12-01T00:00:30Z"}"#

    /// The caller's held media token goes as two held copies on the call connections, with
    /// `wait` clamped to 0–25 and a timeout past it; the watcher's polls as two held copies
    /// on the call-event connections.
    @Test func heldRequestsGoAsHeldCopies() async throws {
        let calls = RecordingTransport(body: Self.token), events = RecordingTransport(body: Self.token)
        let client = SwitchboardClient(
            baseURL: URL(string: "http://switchboard.test")!, token: "t", transport: calls, callEventTransport: events)
        let token = try await client.mediaToken(forCall: "c 1", waitingUpTo: 40)
        #expect(token.token == "jwt")
        #expect(events.requests.isEmpty)
        let held = try #require(calls.requests.first)
        #expect(calls.requests.count == 1)
        #expect(held.line == "POST /calls/c%201/media-token?wait=25")
        #expect(held.timeout == 35 && held.heldCopies == 2)
        _ = try await client.mediaToken(forCall: "c1", waitingUpTo: -3)
        #expect(calls.requests.last?.line == "POST /calls/c1/media-token?wait=0")
        // The plain one is hedged when the network is lossy (repeatable).
        _ = try await client.mediaToken(forCall: "c1")
        #expect(calls.requests.last?.line == "POST /calls/c1/media-token" && calls.requests.last?.repeatable == true)
        #expect(calls.requests.last?.heldCopies == 0)
        #expect(events.requests.isEmpty)
        // The call watcher's long poll.
        let events2 = RecordingTransport(body: #"{"events":[],"cursor":7}"#)
        let watching = SwitchboardClient(
            baseURL: URL(string: "http://switchboard.test")!, token: "t", transport: calls, callEventTransport: events2)
        _ = try await watching.callEvents(after: 7, wait: 20)
        #expect(events2.requests.first?.line == "GET /events?after=7&wait=20")
        #expect(events2.requests.first?.heldCopies == 2 && events2.requests.first?.timeout == 30)
    }

    /// A device's tokens go as one repeatable `POST /push/devices` (registering the same set
    /// twice is harmless), by channel; the answer decodes into the registered device.
    @Test func pushDevicesAreRegisteredByChannel() async throws {
        let answer =
            #"{"deviceId":"d","platform":"android","brand":"huawei","tokens":[{"channel":"fcm","tokenSuffix":"abcdefgh"}],"updatedAt":"2026-12-02T00:00:00.000Z"}"#
        let transport = RecordingTransport(body: answer)
        let client = SwitchboardClient(
            baseURL: URL(string: "http://switchboard.test")!, token: "t", transport: transport)
        let device = try await client.registerPushDevice(
            RegisterPushDevice(
                deviceId: "d", platform: .android, brand: "huawei", tokens: ["fcm": PushTokenRegistration(token: "x")]))
        #expect(
            device.tokens == [PushTokenInfo(channel: .fcm, environment: nil, tokenSuffix: "abcdefgh")]
                && device.brand == "huawei")
        #expect(transport.requests.first?.line == "POST /push/devices" && transport.requests.first?.repeatable == true)
        let id = UUID()
        try await client.unregisterPushDevice(deviceID: id)
        #expect(transport.requests.last?.line == "DELETE /push/devices/\(id.uuidString.lowercased())")
    }
}
