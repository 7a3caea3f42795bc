/// A stable code of the API's error envelope, `{"error": {"code": "CALL_BUSY", ...}}`.
///
/// The static members are the catalogue: every code the server answers with, each with the
/// status it is answered with and what it means. `openapi.json` lists the same codes in its
/// `Error` schema, and a test holds the two together, so a new refusal cannot ship undocumented.
/// A code this version does not know decodes as itself with status 0 (clients go by the status
/// of the answer then), so the set may grow.
///
/// ```swift
/// throw APIError(.callBusy, "you are already in a call")          // server
/// catch let error as SwitchboardAPIError where error.code == .scheduledCallEnded   // SDK
/// ```
public struct ErrorCode: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    /// The wire spelling, UPPER_SNAKE.
    public let rawValue: String
    /// The status the server answers this code with; a code some routes answer with another
    /// status says so in ``summary``. 0 for a code outside the catalogue.
    public let status: Int
    /// What the code means, for people; empty for a code outside the catalogue.
    public let summary: String

    private init(_ rawValue: String, _ status: Int, _ summary: String) {
        self.rawValue = rawValue
        self.status = status
        self.summary = summary
    }

    /// The catalogue's code spelled `rawValue`, else an unknown code with status 0.
    public init(rawValue: String) {
        self = Self.byName[rawValue] ?? ErrorCode(rawValue, 0, "")
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    /// Equal when the spellings are.
    public static func == (lhs: ErrorCode, rhs: ErrorCode) -> Bool { lhs.rawValue == rhs.rawValue }

    public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

    private static let byName = Dictionary(uniqueKeysWithValues: (catalogue + clientSide).map { ($0.rawValue, $0) })

    // MARK: The HTTP core's codes, for requests that never reach a route or fail in transport

    /// 400: malformed HTTP.
    public static let badRequest = ErrorCode("BAD_REQUEST", 400, "malformed HTTP")
    /// 400: bad input, names the field.
    public static let validationFailed = ErrorCode("VALIDATION_FAILED", 400, "bad input, names the field")
    /// 404: an unknown route, or a resource that does not exist or is not visible to the caller.
    public static let notFound = ErrorCode(
        "NOT_FOUND", 404, "an unknown route, or a resource that does not exist or is not visible to the caller")
    /// 405: with an Allow header.
    public static let methodNotAllowed = ErrorCode("METHOD_NOT_ALLOWED", 405, "with an Allow header")
    /// 408: the request head or body did not arrive in time.
    public static let requestTimeout = ErrorCode(
        "REQUEST_TIMEOUT", 408, "the request head or body did not arrive in time")
    /// 413: the body is larger than the route takes.
    public static let bodyTooLarge = ErrorCode("BODY_TOO_LARGE", 413, "the body is larger than the route takes")
    /// 417: an Expect header other than 100-continue.
    public static let expectationFailed = ErrorCode(
        "EXPECTATION_FAILED", 417, "an Expect header other than 100-continue")
    /// 431: the request head is too large.
    public static let headersTooLarge = ErrorCode("HEADERS_TOO_LARGE", 431, "the request head is too large")
    /// 500: the server's fault; the detail is in its log, not in the answer.
    public static let `internal` = ErrorCode(
        "INTERNAL", 500, "the server's fault; the detail is in its log, not in the answer")
    /// 501: a transfer coding the server does not implement.
    public static let notImplemented = ErrorCode(
        "NOT_IMPLEMENTED", 501, "a transfer coding the server does not implement")
    /// 503: too much work is waiting; try again after Retry-After seconds.
    public static let serverBusy = ErrorCode(
        "SERVER_BUSY", 503, "too much work is waiting; try again after Retry-After seconds")
    /// 503: the server is shutting down; try another instance.
    public static let shuttingDown = ErrorCode(
        "SHUTTING_DOWN", 503, "the server is shutting down; try another instance")
    /// 505: an HTTP version other than 1.0 and 1.1.
    public static let httpVersionNotSupported = ErrorCode(
        "HTTP_VERSION_NOT_SUPPORTED", 505, "an HTTP version other than 1.0 and 1.1")

    // MARK: The API's codes

    /// 499: only in logs and metrics: the client went away, so no one receives it.
    public static let clientClosedRequest = ErrorCode(
        "CLIENT_CLOSED_REQUEST", 499, "only in logs and metrics: the client went away, so no one receives it")
    /// 401: no bearer token, a malformed Authorization header, or an unknown or ended session.
    public static let unauthorized = ErrorCode(
        "UNAUTHORIZED", 401, "no bearer token, a malformed Authorization header, or an unknown or ended session")
    /// 401: login with an unknown username or a wrong password.
    public static let invalidCredentials = ErrorCode(
        "INVALID_CREDENTIALS", 401, "login with an unknown username or a wrong password")
    /// 429: a limit was reached: failed logins, registrations per address, calls per caller or callee, messages, Call Directory changes, live-location updates; wait Retry-After seconds.
    public static let rateLimited = ErrorCode(
        "RATE_LIMITED", 429,
        "a limit was reached: failed logins, registrations per address, calls per caller or callee, messages, Call Directory changes, live-location updates; wait Retry-After seconds"
    )
    /// 409: another account's live session registered this push token.
    public static let pushTokenTaken = ErrorCode(
        "PUSH_TOKEN_TAKEN", 409, "another account's live session registered this push token")
    /// 409: an app with this id is registered already.
    public static let gatewayAppExists = ErrorCode(
        "GATEWAY_APP_EXISTS", 409, "an app with this id is registered already")
    /// 409: the app has a key with this id already.
    public static let gatewayKeyExists = ErrorCode("GATEWAY_KEY_EXISTS", 409, "the app has a key with this id already")
    /// 401: a gateway signature header is missing.
    public static let gatewayUnsigned = ErrorCode("GATEWAY_UNSIGNED", 401, "a gateway signature header is missing")
    /// 401: signed more than 60 s from the server's clock.
    public static let gatewayStaleTimestamp = ErrorCode(
        "GATEWAY_STALE_TIMESTAMP", 401, "signed more than 60 s from the server's clock")
    /// 401: no such app or key.
    public static let gatewayUnknownKey = ErrorCode("GATEWAY_UNKNOWN_KEY", 401, "no such app or key")
    /// 401: the signature does not match the request.
    public static let gatewayBadSignature = ErrorCode(
        "GATEWAY_BAD_SIGNATURE", 401, "the signature does not match the request")
    /// 401: the same signed request taken already; see the gatewaySignature scheme.
    public static let gatewayReplayed = ErrorCode(
        "GATEWAY_REPLAYED", 401, "the same signed request taken already; see the gatewaySignature scheme")
    /// 413: a gateway request body is at most 64 KiB.
    public static let gatewayBodyTooLarge = ErrorCode(
        "GATEWAY_BODY_TOO_LARGE", 413, "a gateway request body is at most 64 KiB")
    /// 409: the username is taken.
    public static let usernameTaken = ErrorCode("USERNAME_TAKEN", 409, "the username is taken")
    /// 410: the event cursor predates the retention window: take a new snapshot.
    public static let cursorExpired = ErrorCode(
        "CURSOR_EXPIRED", 410, "the event cursor predates the retention window: take a new snapshot")
    /// 403: one of the two users has blocked the other.
    public static let blocked = ErrorCode("BLOCKED", 403, "one of the two users has blocked the other")
    /// 403: the users are not friends.
    public static let notFriends = ErrorCode("NOT_FRIENDS", 403, "the users are not friends")
    /// 409: the two users are friends already.
    public static let alreadyFriends = ErrorCode("ALREADY_FRIENDS", 409, "the two users are friends already")
    /// 409: a pending friend request between the two exists in either direction.
    public static let requestPending = ErrorCode(
        "REQUEST_PENDING", 409, "a pending friend request between the two exists in either direction")
    /// 409: the friend request was already accepted, declined or cancelled.
    public static let requestNotPending = ErrorCode(
        "REQUEST_NOT_PENDING", 409, "the friend request was already accepted, declined or cancelled")
    /// 403: the caller has the wrong role, e.g. only the recipient answers a friend request.
    public static let forbidden = ErrorCode(
        "FORBIDDEN", 403, "the caller has the wrong role, e.g. only the recipient answers a friend request")
    /// 403: only the group's owner can do this.
    public static let notGroupOwner = ErrorCode("NOT_GROUP_OWNER", 403, "only the group's owner can do this")
    /// 409: the group owner cannot leave: dissolve the group instead.
    public static let ownerCannotLeave = ErrorCode(
        "OWNER_CANNOT_LEAVE", 409, "the group owner cannot leave: dissolve the group instead")
    /// 409: the owner cannot be removed from their group.
    public static let cannotRemoveOwner = ErrorCode(
        "CANNOT_REMOVE_OWNER", 409, "the owner cannot be removed from their group")
    /// 409: a message clientId already used for a different message.
    public static let clientIdReused = ErrorCode(
        "CLIENT_ID_REUSED", 409, "a message clientId already used for a different message")
    /// 409: a friend request to oneself.
    public static let cannotBefriendSelf = ErrorCode("CANNOT_BEFRIEND_SELF", 409, "a friend request to oneself")
    /// 409: blocking oneself.
    public static let cannotBlockSelf = ErrorCode("CANNOT_BLOCK_SELF", 409, "blocking oneself")
    /// 403: no adminKey is configured.
    public static let adminDisabled = ErrorCode("ADMIN_DISABLED", 403, "no adminKey is configured")
    /// 409: the user or the scope is already in a ringing or active call, or a call clientId was reused with different content.
    public static let callBusy = ErrorCode(
        "CALL_BUSY", 409,
        "the user or the scope is already in a ringing or active call, or a call clientId was reused with different content"
    )
    /// 409: the call has ended.
    public static let callEnded = ErrorCode("CALL_ENDED", 409, "the call has ended")
    /// 409: cancel needs a ringing call.
    public static let callNotRinging = ErrorCode("CALL_NOT_RINGING", 409, "cancel needs a ringing call")
    /// 409: join needs an active call.
    public static let callNotActive = ErrorCode("CALL_NOT_ACTIVE", 409, "join needs an active call")
    /// 409: only group calls can be joined.
    public static let callNotJoinable = ErrorCode("CALL_NOT_JOINABLE", 409, "only group calls can be joined")
    /// 409: the user has no invitation to the call or it no longer rings.
    public static let invitationNotRinging = ErrorCode(
        "INVITATION_NOT_RINGING", 409, "the user has no invitation to the call or it no longer rings")
    /// 403: only the call's caller can do this.
    public static let notCaller = ErrorCode("NOT_CALLER", 403, "only the call's caller can do this")
    /// 403: the user is not in the conversation or group: to start, read or join its calls.
    public static let notMember = ErrorCode(
        "NOT_MEMBER", 403, "the user is not in the conversation or group: to start, read or join its calls")
    /// 409: on leave: the user is not in the call; 403 on media-token: the user is not a present participant of an active call.
    public static let notParticipant = ErrorCode(
        "NOT_PARTICIPANT", 409,
        "on leave: the user is not in the call; 403 on media-token: the user is not a present participant of an active call"
    )
    /// 409: the user is already in the call.
    public static let alreadyParticipant = ErrorCode("ALREADY_PARTICIPANT", 409, "the user is already in the call")
    /// 409: the call kept changing concurrently: re-read it and retry.
    public static let callChanged = ErrorCode(
        "CALL_CHANGED", 409, "the call kept changing concurrently: re-read it and retry")
    /// 409: a group call with no other members.
    public static let nobodyToCall = ErrorCode("NOBODY_TO_CALL", 409, "a group call with no other members")
    /// 503: the media server failed or did not answer in time during a call transition; nothing changed, retry.
    public static let callMediaUnavailable = ErrorCode(
        "CALL_MEDIA_UNAVAILABLE", 503,
        "the media server failed or did not answer in time during a call transition; nothing changed, retry")
    /// 409: a payload key or an app's push credentials were sent but the server has no dataEncryptionKey to store them under.
    public static let dataEncryptionDisabled = ErrorCode(
        "DATA_ENCRYPTION_DISABLED", 409,
        "a payload key or an app's push credentials were sent but the server has no dataEncryptionKey to store them under"
    )
    /// 401: not a media token of this server's relay, expired, or for another call.
    public static let mediaTokenInvalid = ErrorCode(
        "MEDIA_TOKEN_INVALID", 401, "not a media token of this server's relay, expired, or for another call")
    /// 426: a plain request to a WebSocket resource.
    public static let websocketUpgradeRequired = ErrorCode(
        "WEBSOCKET_UPGRADE_REQUIRED", 426, "a plain request to a WebSocket resource")
    /// 426: a WebSocket version other than 13; the answer carries Sec-WebSocket-Version: 13.
    public static let websocketVersionUnsupported = ErrorCode(
        "WEBSOCKET_VERSION_UNSUPPORTED", 426,
        "a WebSocket version other than 13; the answer carries Sec-WebSocket-Version: 13")
    /// 400: a malformed WebSocket handshake.
    public static let websocketBadHandshake = ErrorCode(
        "WEBSOCKET_BAD_HANDSHAKE", 400, "a malformed WebSocket handshake")
    /// 401: the delivery's token is not LiveKit's for this server's API key and secret, has expired, or was signed for another body.
    public static let webhookSignatureInvalid = ErrorCode(
        "WEBHOOK_SIGNATURE_INVALID", 401,
        "the delivery's token is not LiveKit's for this server's API key and secret, has expired, or was signed for another body"
    )
    /// 409: a live-location update without a running share.
    public static let notSharing = ErrorCode("NOT_SHARING", 409, "a live-location update without a running share")
    /// 409: another account registered this E2EE device id, or another account's live session this push device id.
    public static let deviceIdTaken = ErrorCode(
        "DEVICE_ID_TAKEN", 409,
        "another account registered this E2EE device id, or another account's live session this push device id")
    /// 401: a gateway request signed the version 1 way while the server refuses it.
    public static let gatewaySignatureV1 = ErrorCode(
        "GATEWAY_SIGNATURE_V1", 401, "a gateway request signed the version 1 way while the server refuses it")
    /// 403: another account's E2EE device.
    public static let notYourDevice = ErrorCode("NOT_YOUR_DEVICE", 403, "another account's E2EE device")
    /// 409: a list would hold more entries of a kind than its limit.
    public static let callDirectoryFull = ErrorCode(
        "CALL_DIRECTORY_FULL", 409, "a list would hold more entries of a kind than its limit")
    /// 409: the group has 100 upcoming scheduled calls.
    public static let scheduledCallsFull = ErrorCode(
        "SCHEDULED_CALLS_FULL", 409, "the group has 100 upcoming scheduled calls")
    /// 409: a pre-authorisation for a scheduled call cancelled, over, or whose call ended.
    public static let scheduledCallEnded = ErrorCode(
        "SCHEDULED_CALL_ENDED", 409, "a pre-authorisation for a scheduled call cancelled, over, or whose call ended")

    /// 409: a webhook delivery asked to be sent again is still pending: it goes by itself.
    public static let deliveryPending = ErrorCode(
        "DELIVERY_PENDING", 409, "the delivery is still pending; it is sent again by itself")

    // MARK: Codes only a client makes

    /// No answer came back: the connection failed or timed out.
    public static let transport = ErrorCode("TRANSPORT", 0, "no answer came back: the connection failed or timed out")
    /// An answer came back that did not decode.
    public static let badResponse = ErrorCode("BAD_RESPONSE", 0, "the server's answer did not decode")

    /// Every code the server answers with, in the order `openapi.json` lists them.
    public static let catalogue: [ErrorCode] = [
        .badRequest, .validationFailed, .notFound, .methodNotAllowed, .requestTimeout, .bodyTooLarge,
        .expectationFailed, .headersTooLarge, .`internal`, .notImplemented, .serverBusy, .shuttingDown,
        .httpVersionNotSupported, .clientClosedRequest, .unauthorized, .invalidCredentials, .rateLimited,
        .pushTokenTaken, .gatewayAppExists, .gatewayKeyExists, .gatewayUnsigned, .gatewayStaleTimestamp,
        .gatewayUnknownKey, .gatewayBadSignature, .gatewayReplayed, .gatewayBodyTooLarge, .usernameTaken,
        .cursorExpired, .blocked, .notFriends, .alreadyFriends, .requestPending, .requestNotPending, .forbidden,
        .notGroupOwner, .ownerCannotLeave, .cannotRemoveOwner, .clientIdReused, .cannotBefriendSelf,
        .cannotBlockSelf, .adminDisabled, .callBusy, .callEnded, .callNotRinging, .callNotActive, .callNotJoinable,
        .invitationNotRinging, .notCaller, .notMember, .notParticipant, .alreadyParticipant, .callChanged,
        .nobodyToCall, .callMediaUnavailable, .dataEncryptionDisabled, .mediaTokenInvalid, .websocketUpgradeRequired,
        .websocketVersionUnsupported, .websocketBadHandshake, .webhookSignatureInvalid, .notSharing, .deviceIdTaken,
        .gatewaySignatureV1, .notYourDevice, .callDirectoryFull, .scheduledCallsFull, .scheduledCallEnded,
        .deliveryPending,
    ]

    /// Codes a client makes itself and the server never answers with.
    public static let clientSide: [ErrorCode] = [.transport, .badResponse]
}

/// The body of every error answer: `{"error": {"code": "...", "message": "...", "field"?: "..."}}`.
public struct ErrorEnvelope: Codable, Sendable, Equatable {
    /// The error itself.
    public struct Detail: Codable, Sendable, Equatable {
        public var code: ErrorCode
        public var message: String
        /// The request field at fault, when the server names one.
        public var field: String?

        public init(code: ErrorCode, message: String, field: String? = nil) {
            self.code = code
            self.message = message
            self.field = field
        }
    }

    public var error: Detail

    public init(error: Detail) { self.error = error }
}
