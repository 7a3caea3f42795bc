import Foundation
import SwitchboardCrypto
import SwitchboardHTTP

/// `POST /livekit/webhook` (with `mediaBackend: livekit`): LiveKit tells the server about its
/// rooms, so a room everyone left (or LiveKit closed) ends its call at once, and one whose last
/// connection broke starts the empty-room grace at once, instead of at the watchdog's pace.
///
/// LiveKit signs each delivery: `Authorization` carries a JWT (no `Bearer` prefix; one is
/// accepted too), HS256 with the API secret, `iss` the API key, valid for a few minutes, whose
/// `sha256` claim is the standard base64 of the body's SHA-256. The signature and the hash are
/// checked before the body is read. Webhooks can be dropped (LiveKit's queue is bounded), so the
/// watchdog stays as the safety net.
struct LiveKitWebhookRoutes {
    let calls: CallService
    let apiKey: String
    let apiSecret: String
    let now: @Sendable () -> Date
    /// Whether LiveKit is the media backend; otherwise the route answers 404.
    let enabled: Bool

    struct Claims: Decodable {
        let iss: String?
        let exp: Int64?
        let nbf: Int64?
        let sha256: String?
    }

    /// The fields of LiveKit's `WebhookEvent` this server reads (protojson: lowerCamelCase,
    /// zero values omitted).
    struct Event: Decodable {
        struct Room: Decodable { let name: String? }
        let event: String
        let room: Room?
    }

    func register(in router: inout Router) {
        let routes = self
        router.add("POST", "/livekit/webhook") { context in
            guard routes.enabled else { throw APIError.notFound("LiveKit webhooks need mediaBackend livekit") }
            try routes.verify(context.request)
            guard let event = try? JSONDecoder().decode(Event.self, from: Data(context.request.body)) else {
                throw APIError.validation("not a LiveKit webhook event (a JSON object with `event`)")
            }
            let news: CallService.RoomNews? =
                switch event.event {
                case "participant_joined": .joined
                case "participant_left": .left
                case "participant_connection_aborted": .dropped
                case "room_finished": .finished
                default: nil
                }
            if let news, let room = event.room?.name { try await routes.calls.roomNews(news, room: room) }
            return .json(["received": true])
        }
    }

    /// 401 unless LiveKit signed this exact body with our API key and secret, recently.
    func verify(_ request: HTTPRequest) throws(APIError) {
        func refuse(_ message: String) -> APIError { APIError(.webhookSignatureInvalid, message) }
        guard var token = request.headers["Authorization"]?.trimmingCharacters(in: .whitespaces), !token.isEmpty else {
            throw APIError(.unauthorized, "a webhook carries LiveKit's signed token in Authorization")
        }
        if token.lowercased().hasPrefix("bearer ") { token = token.dropFirst(7).trimmingCharacters(in: .whitespaces) }
        guard let json = JWT.verifyHS256(token, secret: Array(apiSecret.utf8)),
            let claims = try? JSONDecoder().decode(Claims.self, from: Data(json))
        else {
            throw refuse("the token is not signed with this server's LiveKit API secret")
        }
        guard claims.iss == apiKey else { throw refuse("the token is not issued for this server's LiveKit API key") }
        let seconds = now().timeIntervalSince1970
        // A minute of leeway either way for clocks that differ a little.
        guard let exp = claims.exp, Double(exp) + 60 > seconds else { throw refuse("the token has expired") }
        if let nbf = claims.nbf, Double(nbf) - 60 > seconds { throw refuse("the token is not valid yet") }
        let digest = Data(SHA256.hash(request.body)).base64EncodedString()
        guard let claimed = claims.sha256, ConstantTime.equals(Array(claimed.utf8), Array(digest.utf8)) else {
            throw refuse("the body is not the one the token was signed for")
        }
    }
}
