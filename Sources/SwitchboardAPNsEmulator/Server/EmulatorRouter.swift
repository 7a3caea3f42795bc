import Foundation
import SwitchboardPushCore

/// Decides what to do with each complete request; owned by the loop thread.
///
/// Push handling: a `refuseStream` fault is taken first (the request is not processed at all);
/// then the request is validated; a valid push then takes its answer fault (if any) and its
/// delay (if any); every processed push, valid or not, takes a GOAWAY if the connection has
/// now carried enough pushes. An accepted push
/// is appended to its token's inbox when its 200 is sent, so a delayed push whose stream the
/// client resets before the delay ends is never delivered.
struct EmulatorRouter {
    /// A valid push waiting to be appended to its inbox when its 200 goes out.
    struct Delivery: Sendable {
        var push: AcceptedPush
        var apnsID: String
    }

    /// What the loop does with a request.
    enum Action {
        /// Submit this response now (with the delivery to make, for an accepted push).
        case respond(EmulatorResponse, delivery: Delivery?)
        /// Submit it after `milliseconds`, if the stream is still open then.
        case respondLater(EmulatorResponse, delivery: Delivery?, milliseconds: Int)
        /// Reset the stream with `REFUSED_STREAM`.
        case refuse
        /// Hold an inbox long poll until a push arrives for `token` or `seconds` pass.
        case waitForInbox(token: String, after: Int, seconds: Int)
    }

    /// The action, and the GOAWAY reason if the connection is to be closed after this stream.
    struct Decision {
        var action: Action
        var goawayReason: String?
    }

    private var validator: PushValidator
    private let shared: EmulatorShared
    private let clock: APNsEmulatorClock
    private let makeID: @Sendable () -> String
    private let maxLongPollSeconds: Int
    private let fcm: FCMRouter
    private let huawei: HuaweiRouter
    private let vendors: VendorRouters

    init(
        policy: PushValidator.Policy, shared: EmulatorShared, clock: APNsEmulatorClock,
        makeID: @escaping @Sendable () -> String, maxLongPollSeconds: Int, fcm: FCMRouter = FCMRouter(account: nil),
        huawei: HuaweiRouter = HuaweiRouter(app: nil), vendors: VendorRouters = VendorRouters()
    ) {
        self.fcm = fcm
        self.huawei = huawei
        self.vendors = vendors
        validator = PushValidator(policy: policy)
        self.shared = shared
        self.clock = clock
        self.makeID = makeID
        self.maxLongPollSeconds = maxLongPollSeconds
    }

    /// Routes `request`, the `pushStreamsOnConnection`-th push on its connection if it is one.
    mutating func route(_ request: EmulatorRequest, pushStreamsOnConnection: Int) -> Decision {
        let path = request.pathWithoutQuery
        if path.hasPrefix(PushValidator.pathPrefix) {
            return routePush(request, pushStreamsOnConnection: pushStreamsOnConnection)
        }
        if path == "/token" {
            let now = clock.nowMilliseconds()
            return Decision(
                action: .respond(
                    shared.state.withLock { fcm.token(request, state: &$0.fcm, nowMilliseconds: now) }, delivery: nil),
                goawayReason: nil)
        }
        if path == "/oauth2/v3/token" {
            let now = clock.nowMilliseconds()
            return Decision(
                action: .respond(
                    shared.state.withLock { huawei.token(request, state: &$0.huawei, nowMilliseconds: now) },
                    delivery: nil), goawayReason: nil)
        }
        if let decision = routeVendor(request, path: path) { return decision }
        if path.hasPrefix("/v1/"), !path.hasPrefix("/v1/projects/"), path.hasSuffix("/messages:send") {
            let now = clock.nowMilliseconds()
            let (response, accepted) = shared.state.withLock { state in
                state.stats.pushRequests += 1
                return huawei.send(request, state: &state.huawei, nowMilliseconds: now)
            }
            let delivery = accepted.map {
                Delivery(
                    push: AcceptedPush(deviceToken: $0.key, apnsID: $0.name, headers: [], payload: request.body),
                    apnsID: $0.name)
            }
            return Decision(action: .respond(response, delivery: delivery), goawayReason: nil)
        }
        if path.hasPrefix("/v1/projects/") {
            let now = clock.nowMilliseconds()
            let (response, accepted) = shared.state.withLock { state in
                state.stats.pushRequests += 1
                return fcm.send(request, state: &state.fcm, nowMilliseconds: now)
            }
            let delivery = accepted.map {
                Delivery(
                    push: AcceptedPush(deviceToken: $0.key, apnsID: $0.name, headers: [], payload: request.body),
                    apnsID: $0.name)
            }
            return Decision(action: .respond(response, delivery: delivery), goawayReason: nil)
        }
        return Decision(action: routeSupport(request, path: path), goawayReason: nil)
    }

    /// Xiaomi's, OPPO's and vivo's paths; `nil` for any other.
    private func routeVendor(_ request: EmulatorRequest, path: Substring) -> Decision? {
        let now = clock.nowMilliseconds()
        let answer: VendorAnswer
        switch path {
        case "/server/v1/auth":
            return Decision(
                action: .respond(
                    shared.state.withLock { vendors.oppo.auth(request, state: &$0.oppo, nowMilliseconds: now) },
                    delivery: nil), goawayReason: nil)
        case "/message/auth":
            return Decision(
                action: .respond(
                    shared.state.withLock { vendors.vivo.auth(request, state: &$0.vivo, nowMilliseconds: now) },
                    delivery: nil), goawayReason: nil)
        case XiaomiMessage.path:
            answer = shared.state.withLock { state in
                state.stats.pushRequests += 1
                return vendors.xiaomi.send(request, state: &state.xiaomi, nowMilliseconds: now)
            }
        case OPPOMessage.unicastPath:
            answer = shared.state.withLock { state in
                state.stats.pushRequests += 1
                return vendors.oppo.unicast(request, state: &state.oppo, nowMilliseconds: now)
            }
        case VivoMessage.sendPath:
            answer = shared.state.withLock { state in
                state.stats.pushRequests += 1
                return vendors.vivo.send(request, state: &state.vivo, nowMilliseconds: now)
            }
        default:
            return nil
        }
        let delivery = answer.1.map {
            Delivery(
                push: AcceptedPush(deviceToken: $0.key, apnsID: $0.name, headers: [], payload: $0.message),
                apnsID: $0.name)
        }
        return Decision(action: .respond(answer.0, delivery: delivery), goawayReason: nil)
    }

    /// Whether `path` is a push (so the connection counts it toward `goawayAfter`).
    static func isPush(_ request: EmulatorRequest) -> Bool {
        request.pathWithoutQuery.hasPrefix(PushValidator.pathPrefix)
    }

    // MARK: Pushes

    private mutating func routePush(_ request: EmulatorRequest, pushStreamsOnConnection: Int) -> Decision {
        let token = String(request.pathWithoutQuery.dropFirst(PushValidator.pathPrefix.count)).lowercased()
        let refused = shared.state.withLock { state in
            state.stats.pushRequests += 1
            guard state.faults.takeRefusal(token: token) else { return false }
            state.stats.streamsRefused += 1
            return true
        }
        if refused { return Decision(action: .refuse, goawayReason: nil) }

        let now = clock.nowMilliseconds()
        switch validator.validate(request, nowMilliseconds: now) {
        case .rejected(let rejection, let apnsID, _):
            let goaway = shared.state.withLock { state in
                state.faults.takeGoaway(token: token, streamsOnConnection: pushStreamsOnConnection)
            }
            return Decision(
                action: .respond(Self.response(rejection, apnsID: apnsID ?? makeID()), delivery: nil),
                goawayReason: goaway)
        case .accepted(let push):
            let apnsID = push.apnsID ?? makeID()
            let (answer, delay, goaway) = shared.state.withLock { state in
                (
                    state.faults.takeAnswer(token: push.deviceToken),
                    state.faults.takeDelay(token: push.deviceToken),
                    state.faults.takeGoaway(token: push.deviceToken, streamsOnConnection: pushStreamsOnConnection)
                )
            }
            let response: EmulatorResponse
            var delivery: Delivery?
            if let rejection = answer?.rejection(nowMilliseconds: now) {
                response = Self.response(rejection, apnsID: apnsID)
            } else {
                response = EmulatorResponse(status: 200, headers: [APNsHeader("apns-id", apnsID)], isPushAnswer: true)
                delivery = Delivery(push: push, apnsID: apnsID)
            }
            let action: Action =
                if let delay {
                    .respondLater(response, delivery: delivery, milliseconds: delay)
                } else {
                    .respond(response, delivery: delivery)
                }
            return Decision(action: action, goawayReason: goaway)
        }
    }

    /// Records that `response` was sent and delivers the push it answered, if any; returns the
    /// device token whose inbox grew.
    func sent(_ response: EmulatorResponse, delivery: Delivery?) -> String? {
        let now = clock.nowMilliseconds()
        return shared.state.withLock { state in
            if response.isPushAnswer { state.countAnswer(status: response.status, reason: response.reason) }
            guard let delivery else { return nil }
            state.inbox.append(
                token: delivery.push.deviceToken, apnsID: delivery.apnsID, headers: delivery.push.headers,
                payload: delivery.push.payload, receivedAt: now)
            state.stats.pushesDelivered += 1
            state.noteDelivery(apnsID: delivery.apnsID)
            return delivery.push.deviceToken
        }
    }

    /// Records that a delayed answer was never sent because its stream had closed.
    func abandoned() {
        shared.state.withLock { $0.stats.delayedAnswersAbandoned += 1 }
    }

    /// An APNs error response: `apns-id` header and `{"reason":…}` body.
    static func response(_ rejection: APNsRejection, apnsID: String) -> EmulatorResponse {
        EmulatorResponse(
            status: rejection.status,
            headers: [APNsHeader("apns-id", apnsID), APNsHeader("content-type", "application/json")],
            body: rejection.body, isPushAnswer: true, reason: rejection.reason)
    }

    // MARK: Inbox and control

    private func routeSupport(_ request: EmulatorRequest, path: Substring) -> Action {
        let segments = Array(path.split(separator: "/", omittingEmptySubsequences: false).dropFirst())
        let method = request.method
        if segments.count == 3, ["fcm", "huawei", "xiaomi", "oppo", "vivo"].contains(segments[0]),
            segments[1] == "inbox", !segments[2].isEmpty
        {
            // FCM's and the vendors' tokens are case-sensitive: kept as sent, apart from APNs's.
            let key = "\(segments[0]):" + (segments[2].removingPercentEncoding ?? String(segments[2]))
            switch method {
            case "GET": return readInbox(token: key, request: request)
            case "DELETE":
                shared.state.withLock { $0.inbox.clear(token: key) }
                return .respond(EmulatorResponse(status: 204), delivery: nil)
            default: return .respond(.error(405, "use GET or DELETE on \(path)"), delivery: nil)
            }
        }
        if segments.count == 3, EmulatorState.vendorChannels.contains(String(segments[0])), segments[1] == "control",
            segments[2] == "faults"
        {
            guard method == "POST" else { return .respond(.error(405, "use POST on \(path)"), delivery: nil) }
            guard let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any],
                let token = object["token"] as? String, let codes = object["codes"] as? [String], !codes.isEmpty
            else { return .respond(.error(400, #"a fault is {"token":T,"codes":["<result code>",…]}"#), delivery: nil) }
            shared.state.withLock { _ = $0.withVendor(String(segments[0])) { $0.faults[token, default: []] += codes } }
            return .respond(EmulatorResponse(status: 204), delivery: nil)
        }
        if segments == ["fcm", "control", "faults"] {
            guard method == "POST" else { return .respond(.error(405, "use POST on \(path)"), delivery: nil) }
            do {
                let faults = try FCMFault.parse(request.body)
                shared.state.withLock { $0.fcm.faults += faults }
                return .respond(EmulatorResponse(status: 204), delivery: nil)
            } catch {
                return .respond(.error(400, error.description), delivery: nil)
            }
        }
        if segments.count == 2, segments[0] == "inbox", !segments[1].isEmpty {
            let token = segments[1].lowercased()
            switch method {
            case "GET":
                return readInbox(token: token, request: request)
            case "DELETE":
                shared.state.withLock { $0.inbox.clear(token: token) }
                return .respond(EmulatorResponse(status: 204), delivery: nil)
            default:
                return .respond(.error(405, "use GET or DELETE on \(path)"), delivery: nil)
            }
        }
        if segments == ["control", "faults"] {
            switch method {
            case "GET":
                return .respond(.json(200, faultsJSON()), delivery: nil)
            case "POST":
                do {
                    let faults = try APNsFault.parseScript(request.body)
                    shared.state.withLock { $0.faults.add(faults) }
                    return .respond(.json(200, faultsJSON()), delivery: nil)
                } catch {
                    return .respond(.error(400, error.message), delivery: nil)
                }
            case "DELETE":
                let token = request.query["token"]
                shared.state.withLock { $0.faults.clear(token: token) }
                return .respond(EmulatorResponse(status: 204), delivery: nil)
            default:
                return .respond(.error(405, "use GET, POST or DELETE on \(path)"), delivery: nil)
            }
        }
        if segments == ["control", "stats"] {
            guard method == "GET" else { return .respond(.error(405, "use GET on \(path)"), delivery: nil) }
            return .respond(.json(200, shared.state.withLock { $0.stats.json }), delivery: nil)
        }
        return .respond(Self.response(APNsRejection(.badPath), apnsID: makeID()), delivery: nil)
    }

    private func readInbox(token: String, request: EmulatorRequest) -> Action {
        let query = request.query
        guard let after = Int(query["after"] ?? "0"), after >= 0 else {
            return .respond(.error(400, "after must be an integer ≥ 0"), delivery: nil)
        }
        guard let wait = Int(query["wait"] ?? "0"), wait >= 0 else {
            return .respond(.error(400, "wait must be an integer ≥ 0 (seconds)"), delivery: nil)
        }
        let ready = shared.state.withLock { $0.inbox.hasNews(token: token, after: after) }
        if ready || wait == 0 {
            return .respond(inboxResponse(token: token, after: after), delivery: nil)
        }
        return .waitForInbox(token: token, after: after, seconds: min(wait, maxLongPollSeconds))
    }

    /// `{"messages":[…],"cursor":N}` for `token` after `after`.
    func inboxResponse(token: String, after: Int) -> EmulatorResponse {
        let (messages, cursor) = shared.state.withLock { $0.inbox.read(token: token, after: after) }
        var json = JSONWriter()
        json.beginObject()
        json.key("messages")
        json.beginArray()
        for message in messages { message.write(to: &json) }
        json.endArray()
        json.member("cursor", cursor)
        json.endObject()
        return .json(200, json.bytes)
    }

    /// Whether a long poll on `token` after `after` can be answered now.
    func inboxHasNews(token: String, after: Int) -> Bool {
        shared.state.withLock { $0.inbox.hasNews(token: token, after: after) }
    }

    private func faultsJSON() -> [UInt8] {
        let faults = shared.state.withLock { $0.faults.faults }
        var json = JSONWriter()
        json.beginObject()
        json.key("faults")
        json.beginArray()
        for fault in faults { fault.write(to: &json) }
        json.endArray()
        json.endObject()
        return json.bytes
    }
}

/// The Xiaomi, OPPO and vivo stand-ins (each off without its app).
struct VendorRouters {
    var xiaomi = XiaomiRouter(app: nil)
    var oppo = OPPORouter(app: nil)
    var vivo = VivoRouter(app: nil)
}
