import Synchronization
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SwitchboardCore
import SwitchboardCrypto
import SwitchboardWire

/// Where the media rooms live: the built-in audio relay (`AudioRelay`), LiveKit's rooms the
/// server manages over RoomService, or LiveKit's rooms left to LiveKit. The server mints the
/// access tokens and, when it manages rooms, closes them and removes people from them.
protocol MediaBackend: Sendable {
    /// Whether room actions do anything (and so whether the empty-room watchdog runs).
    var managesRooms: Bool { get }
    /// Whether a transition's room actions run after its commit (a backend that cannot fail
    /// and keeps records of them) rather than before it (LiveKit: a failure answers 503 and
    /// changes nothing).
    var appliesAfterCommit: Bool { get }
    /// Performs room actions, in order; throws when the backend fails or misses its deadline.
    func perform(_ actions: [MediaAction]) async throws
    /// How many participants the room has now; throws when that cannot be known.
    func participantCount(room: String) async throws -> Int
}

/// A media backend failure: the transition is not committed and the client may retry.
struct MediaUnavailable: Error, CustomStringConvertible {
    let description: String
}

/// The default: rooms are LiveKit's own business (created on first join, closed by its own
/// timeouts); room actions do nothing and the watchdog is off.
struct UnmanagedMedia: MediaBackend {
    var managesRooms: Bool { false }
    var appliesAfterCommit: Bool { false }
    func perform(_ actions: [MediaAction]) async throws {}
    func participantCount(room: String) async throws -> Int {
        throw MediaUnavailable(description: "rooms are not managed")
    }
}

/// LiveKit access tokens (HS256 JWT) for one room: identity = user id, a short TTL, grants for
/// that room only — join, publish the microphone (and the camera for video calls), subscribe,
/// and no data publishing.
///
/// With the built-in relay the same kind of token, signed with the relay's own secret, opens
/// the call's audio WebSocket, and `url` is that socket's path (`/calls/{id}/audio`, relative
/// to the server the client already talks to).
struct MediaTokenMinter: Sendable {
    /// The LiveKit URL; ignored for the relay.
    let url: String
    let apiKey: String
    let apiSecret: String
    let ttl: TimeInterval
    /// Whether the tokens are for the built-in relay.
    var relay = false

    /// The relay's audio socket path of a call.
    static func relayPath(callID: String) -> String { "/calls/\(callID)/audio" }

    struct Claims: Encodable {
        struct Video: Encodable {
            let room: String
            let roomJoin: Bool
            let canPublish: Bool
            let canSubscribe: Bool
            let canPublishData: Bool
            let canPublishSources: [String]
        }
        let iss: String
        let sub: String
        let nbf: Int64
        let iat: Int64
        let exp: Int64
        let video: Video
    }

    func mint(identity: String, room: String, callID: String, mode: CallMode, now: Date) -> MediaToken {
        let issued = Int64(now.timeIntervalSince1970.rounded(.down))
        let expires = issued + Int64(ttl)
        let claims = Claims(
            iss: apiKey, sub: identity, nbf: issued, iat: issued, exp: expires,
            video: Claims.Video(
                room: room, roomJoin: true, canPublish: true, canSubscribe: true, canPublishData: false,
                canPublishSources: mode == .video ? ["camera", "microphone"] : ["microphone"]))
        let json = (try? JSONBody.makeEncoder().encode(claims)).map(Array.init) ?? []
        let token = JWT.signHS256(claimsJSON: json, secret: Array(apiSecret.utf8))
        return MediaToken(
            url: relay ? Self.relayPath(callID: callID) : url, token: token,
            expiresAt: Timestamp.iso8601(Date(timeIntervalSince1970: TimeInterval(expires))))
    }
}

/// LiveKit's RoomService over its Twirp JSON API, each call bounded by a deadline.
struct LiveKitRoomService: MediaBackend {
    /// `http(s)://host:port` of the LiveKit server's API.
    let apiBase: URL
    let apiKey: String
    let apiSecret: String
    let deadline: Duration
    /// The wall clock its admin tokens are dated by (the server's, `ServerEnvironment.now`).
    let now: @Sendable () -> Date

    var managesRooms: Bool { true }
    var appliesAfterCommit: Bool { false }

    init(apiBase: URL, apiKey: String, apiSecret: String, deadline: Duration, now: @escaping @Sendable () -> Date) {
        self.apiBase = apiBase
        self.apiKey = apiKey
        self.apiSecret = apiSecret
        self.deadline = deadline
        self.now = now
    }

    /// A session per call: RoomService calls are rare (hang-ups, removals, one watchdog count
    /// per active call every few seconds), and a connection left behind by a request that missed
    /// its deadline must never carry the next request.
    private func makeSession() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        let seconds = deadline.inSeconds
        configuration.timeoutIntervalForRequest = seconds
        configuration.timeoutIntervalForResource = seconds
        return URLSession(configuration: configuration)
    }

    func perform(_ actions: [MediaAction]) async throws {
        for action in actions {
            switch action {
            case .deleteRoom(let room):
                try await call(
                    "DeleteRoom", body: ["room": room], grants: ["roomCreate": true], notFoundIsSuccess: true)
            case .removeParticipant(let room, let identity):
                try await call(
                    "RemoveParticipant", body: ["room": room, "identity": identity],
                    grants: ["roomAdmin": true, "room": room], notFoundIsSuccess: true)
            }
        }
    }

    func participantCount(room: String) async throws -> Int {
        let data = try await call(
            "ListParticipants", body: ["room": room], grants: ["roomAdmin": true, "room": room], notFoundIsSuccess: true
        )
        guard !data.isEmpty else { return 0 }  // the room does not exist: nobody is in it
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw MediaUnavailable(description: "ListParticipants answered something that is not JSON")
        }
        return (object["participants"] as? [Any])?.count ?? 0
    }

    /// One Twirp call: `POST /twirp/livekit.RoomService/{method}` with an admin token. Returns
    /// the body, or empty for a tolerated `not_found`.
    @discardableResult
    private func call(
        _ method: String, body: [String: String], grants: [String: any Sendable], notFoundIsSuccess: Bool
    ) async throws -> Data {
        var request = URLRequest(url: apiBase.appendingPathComponent("twirp/livekit.RoomService/\(method)"))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("Bearer \(adminToken(grants: grants))", forHTTPHeaderField: "Authorization")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        let session = makeSession(), prepared = request
        // The session ends its request at the same deadline; it is let go once the request has
        // ended, never cancelled (see withDeadline).
        let (data, response) = try await withDeadline(deadline, operation: "LiveKit \(method)") {
            defer { session.finishTasksAndInvalidate() }
            return try await session.data(for: prepared)
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        if status == 200 { return data }
        if status == 404, notFoundIsSuccess { return Data() }
        throw MediaUnavailable(
            description: "LiveKit \(method) answered \(status): \(String(decoding: data.prefix(200), as: UTF8.self))")
    }

    private func adminToken(grants: [String: any Sendable]) -> String {
        let now = Int64(self.now().timeIntervalSince1970)
        var video: [String: Any] = [:]
        for (key, value) in grants { video[key] = value }
        let claims: [String: Any] = ["iss": apiKey, "nbf": now, "iat": now, "exp": now + 600, "video": video]
        let json = (try? JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])).map(Array.init) ?? []
        return JWT.signHS256(claimsJSON: json, secret: Array(apiSecret.utf8))
    }
}

/// Runs `body`, failing with `MediaUnavailable` when it takes longer than `deadline`. `body` is
/// never cancelled and not waited for past the deadline: it must end by itself (a URLSession
/// request ends at its own timeout). Cancelling a URLSession task in the instant its timeout
/// completes it deadlocks swift-corelibs-foundation (issue #5412, fixed upstream by PR #5417,
/// not in this toolchain), which wedged a cooperative thread and the test run with it.
func withDeadline<T: Sendable>(
    _ deadline: Duration, operation: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let outcome = DeadlineOutcome<T>()
    return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        outcome.set(continuation)
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.take()?.resume(with: result)
        }
        Task {
            try? await Task.sleep(for: deadline)
            outcome.take()?.resume(
                throwing: MediaUnavailable(description: "\(operation) missed its \(deadline) deadline"))
        }
    }
}

/// The one continuation of a `withDeadline` call: whichever of the body and the timer ends first takes it.
private final class DeadlineOutcome<T: Sendable>: Sendable {
    private let state = Mutex<CheckedContinuation<T, any Error>?>(nil)
    func set(_ continuation: CheckedContinuation<T, any Error>) { state.withLock { $0 = continuation } }
    func take() -> CheckedContinuation<T, any Error>? {
        state.withLock { state in
            defer { state = nil }
            return state
        }
    }
}
