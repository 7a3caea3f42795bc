import Foundation
import SwitchboardCrypto
import SwitchboardHTTP

/// `GET /calls/{id}/audio`: the built-in relay's WebSocket for a current participant of an
/// active call, opened with the call's media token (`Authorization: Bearer`, or `?token=` for
/// clients that cannot set headers on a WebSocket).
struct RelayRoutes {
    /// nil unless the relay is the media backend: the route then answers 404.
    let relay: AudioRelay?
    /// The relay's token secret (what `MediaTokenMinter` signs with for the relay).
    let secret: [UInt8]
    let store: ServerStore
    /// Frames are 320 bytes; anything much larger is a mistake, not audio.
    static let limits = WebSocketLimits(
        maxFrameBytes: 4096, maxMessageBytes: 4096, pingInterval: .seconds(15), idleTimeout: .seconds(45))

    struct Claims: Decodable {
        struct Video: Decodable { let room: String }
        let sub: String
        let exp: Int64
        let video: Video
    }

    func register(in router: inout Router) {
        let relay = self.relay, secret = self.secret, store = self.store
        router.add("GET", "/calls/{id}/audio") { context in
            guard let relay else {
                throw APIError.notFound("the built-in audio relay is off (mediaBackend is not relay)")
            }
            let request = context.request
            guard let token = Self.token(of: request) else {
                throw APIError(.unauthorized, "the call's media token is required (Authorization: Bearer, or ?token=)")
            }
            guard let json = JWT.verifyHS256(token, secret: secret),
                let claims = try? JSONDecoder().decode(Claims.self, from: Data(json))
            else {
                throw APIError(.mediaTokenInvalid, "not a media token of this server's relay")
            }
            let now = store.environment.now()
            guard Double(claims.exp) > now.timeIntervalSince1970 else {
                throw APIError(.mediaTokenInvalid, "the media token has expired; ask for a new one")
            }
            let callID = context.parameter("id")
            // The ticket before the read (see AudioRelay.Ticket).
            let ticket = relay.ticket(room: claims.video.room, callID: callID, userID: claims.sub)
            let call = try await store.snapshot { try $0.calls.load(callID)?.call }
            guard let call else { throw APIError.notFound("no such call") }
            guard call.roomName == claims.video.room else {
                throw APIError(.mediaTokenInvalid, "the media token is for another call")
            }
            guard call.state == .active, call.presentUserIDs.contains(claims.sub), let ticket else {
                throw APIError(.notParticipant, "the audio is only for participants of an active call", status: 403)
            }
            return WebSocket.upgrade(
                request, limits: Self.limits, handlers: relay.handlers(ticket),
                errorResponse: { error in
                    var response = APIError.httpRefusal(status: error.status, code: error.code, message: error.message)
                    for field in error.headers { response.headers.set(field.name, field.value) }
                    return response
                })
        }
    }

    /// The bearer token, else the `token` query parameter.
    static func token(of request: HTTPRequest) -> String? {
        if let header = request.headers["Authorization"], header.count > 7, header.lowercased().hasPrefix("bearer ") {
            let value = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
            if !value.isEmpty { return value }
        }
        if let value = request.queryParameters["token"], !value.isEmpty { return value }
        return nil
    }
}
