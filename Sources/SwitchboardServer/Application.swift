import Foundation
import Synchronization
import SwitchboardCore
import SwitchboardCrypto
import SwitchboardGeo
import SwitchboardHTTP
import SwitchboardStore
import SwitchboardObservability
import SwitchboardPush

/// The product behind the transport: routes every request, maps errors to the envelope,
/// stamps a request id on the response and on every log line, and records metrics.
/// Background work (event waiter timeouts, event retention) runs in `run()`.
public final class Application: Sendable {
    /// The resolved configuration.
    public let configuration: ServerConfiguration
    /// The database: the embedded SQLite one or PostgreSQL.
    public let database: any SQLStore
    /// The database with the event hub.
    public let store: ServerStore
    /// The root logger.
    public let logger: Logger
    /// The metrics registry served at `/metrics`.
    public let metrics: Metrics
    /// The routes.
    public let router: Router
    /// Whether `/metrics` and `/admin/*` have a listener of their own (`operatorListen`).
    let operatorSeparate: Bool

    /// Which listener a request came in on.
    public enum Listener: Sendable {
        /// `listen`: everything, or, with an operator listener, everything but its paths.
        case main
        /// `operatorListen`: `/metrics`, `/admin/*` and the health checks only.
        case operatorOnly
    }
    let calls: CallService
    let dispatcher: PushDispatcher
    /// The built-in audio relay, when it is the media backend.
    let relay: AudioRelay?
    /// Carries out the media withdrawals social changes wrote.
    /// The outbox of media withdrawals and webhook deliveries.
    let outbox: OutboxRunner
    let webhooks: WebhookDeliveries
    let liveLocations: LiveLocationService
    let e2ee: E2EEService
    let callDirectory: CallDirectoryService
    let scheduledCalls: ScheduledCallService

    /// How long a push claim keeps other passes and instances off a job: twice the longest
    /// request deadline of the channels in use (a send may first fetch an access token), plus 5 s.
    static func claimLease(_ configuration: ServerConfiguration) -> TimeInterval {
        TimeInterval(2 * configuration.push.longestRequestTimeoutSeconds + 5)
    }

    /// Wires the routes over an open database.
    init(
        configuration: ServerConfiguration, database: any SQLStore, logger: Logger, metrics: Metrics = Metrics(),
        environment: ServerEnvironment = .live, eventHooks: EventRoutes.Hooks = EventRoutes.Hooks(),
        apnsTransport: (any PushTransport)? = nil, fcmTransport: (any PushTransport)? = nil,
        huaweiTransport: (any PushTransport)? = nil, vendorTransports: [String: any PushTransport] = [:],
        pushJitter: (@Sendable () -> Double)? = nil
    ) throws {
        // A city database that cannot be opened stops the start: a typo must not pass for "unknown".
        let cityDatabase: CityDatabase?
        do {
            cityDatabase =
                configuration.cityDatabaseFile.isEmpty ? nil : try CityDatabase(path: configuration.cityDatabaseFile)
        } catch {
            throw ConfigurationError(message: "cityDatabaseFile: \(error)")
        }
        self.configuration = configuration
        self.database = database
        self.logger = logger
        self.metrics = metrics
        let store = ServerStore(
            backend: database, environment: environment, limits: configuration.limits,
            callMessages: configuration.calls.messages == .on)
        self.store = store
        let authenticator = Authenticator(
            store: store, idleMS: Int64(configuration.accounts.sessionIdleDays) * 86_400_000,
            maxAgeMS: Int64(configuration.accounts.sessionMaxDays) * 86_400_000)
        var router = Router()
        let passwordCost = PasswordHasher.Cost(n: 1 << UInt64(configuration.accounts.passwordScryptLogN), r: 8, p: 1)
        AccountRoutes(
            service: try AccountService(
                store: store,
                hasher: PasswordHasher(
                    cost: passwordCost,
                    workers: ScryptWorkers(
                        width: 2, waitingLimit: configuration.accounts.passwordHashQueue, label: "switchboard.scrypt"))),
            authenticator: authenticator,
            trustedProxies: configuration.http.trustedProxies
        )
        .register(in: &router)
        EventRoutes(
            store: store, authenticator: authenticator, heartbeat: .seconds(configuration.events.heartbeatSeconds),
            hooks: eventHooks,
            held: HeldRequests(
                perUser: configuration.http.maxStreamsPerUser, perAddress: configuration.http.maxConnectionsPerAddress),
            trustedProxies: configuration.http.trustedProxies
        )
        .register(in: &router)
        let channels = try PushChannelConfiguration.channels(
            from: configuration, apnsTransport: apnsTransport, fcmTransport: fcmTransport,
            huaweiTransport: huaweiTransport,
            vendorTransports: vendorTransports)
        SystemRoutes(
            database: database, metrics: metrics,
            expectedSchemaVersion: (database.dialect == .postgres ? PostgresSchema.migrations : Schema.migrations).last?
                .version ?? 0,
            pushChannels: channels.all.filter(\.summary.configured).map(\.name)
        ).register(in: &router)
        WebRoutes().register(in: &router)
        let payloadKeys = PayloadKeyVault(secret: configuration.dataEncryptionKeyBytes)
        let directory = GatewayChannelDirectory(server: channels, store: store, vault: payloadKeys, logger: logger)
        let dispatcher = PushDispatcher(
            store: ServerPushOutbox(store: store), directory: directory, logger: logger, metrics: metrics,
            claimLease: Self.claimLease(configuration),
            jitter: pushJitter ?? { Double.random(in: 0..<1) })
        self.dispatcher = dispatcher
        // The relay signs its media tokens with a secret every instance on the database shares
        // (any instance verifies any instance's tokens): they open relay sockets and nothing
        // else, and live 30 s.
        var relaySettings = AudioRelay.Settings()
        relaySettings.maxFramesPerSecond = configuration.media.relayMaxFramesPerSecond
        var otherInstances: (@Sendable (String) async throws -> Int)?
        if database.isShared {
            otherInstances = { [store] room in try await RelayAcrossInstances.otherSockets(in: room, store: store) }
        }
        let relay =
            configuration.media.backend == .relay
            ? AudioRelay(
                settings: relaySettings, metrics: metrics, logger: logger, now: environment.now,
                otherInstances: otherInstances)
            : nil
        let relaySecret = relay == nil ? "" : try Self.relaySecret(in: database)
        self.relay = relay
        let minter =
            relay == nil
            ? MediaTokenMinter(
                url: configuration.media.livekit.url, apiKey: configuration.media.livekit.apiKey,
                apiSecret: configuration.media.livekit.apiSecret, ttl: 30)
            : MediaTokenMinter(url: "", apiKey: "switchboard-relay", apiSecret: relaySecret, ttl: 30, relay: true)
        let media = relay ?? Self.mediaBackend(for: configuration, now: environment.now)
        let webhooks = WebhookDeliveries(store: store, settings: configuration.webhooks)
        self.webhooks = webhooks
        var outboxHandlers: [OutboxJobKind: any OutboxJobHandler] = [.webhook: webhooks]
        if media.managesRooms { outboxHandlers[.media] = MediaWithdrawals(store: store, media: media) }
        let outbox = OutboxRunner(
            store: store, handlers: outboxHandlers, logger: logger, metrics: metrics,
            maxInFlightPerTarget: webhooks.maxConnectionsPerEndpoint)
        self.outbox = outbox
        let calls = CallService(
            store: store, media: media,
            minter: minter,
            ringTimeout: TimeInterval(configuration.calls.ringTimeoutSeconds),
            emptyRoomGrace: TimeInterval(configuration.calls.emptyRoomGraceSeconds),
            push: channels,
            logger: logger, pushesQueued: { dispatcher.wake() }, payloadKeys: payloadKeys)
        self.calls = calls
        SocialRoutes(
            friends: FriendService(store: store, calls: calls), conversations: ConversationService(store: store),
            groups: GroupService(store: store, calls: calls), authenticator: authenticator
        ).register(in: &router)
        CallRoutes(service: calls, authenticator: authenticator).register(in: &router)
        // Both routes always exist (so other methods get 405); each answers 404 unless its
        // media backend is the one configured.
        RelayRoutes(relay: relay, secret: Array(relaySecret.utf8), store: store).register(in: &router)
        LiveKitWebhookRoutes(
            calls: calls, apiKey: configuration.media.livekit.apiKey, apiSecret: configuration.media.livekit.apiSecret,
            now: environment.now,
            enabled: configuration.media.backend == .livekit
        ).register(in: &router)
        let liveLocations = LiveLocationService(store: store)
        self.liveLocations = liveLocations
        LocationRoutes(
            service: liveLocations,
            cities: CityLookup(database: cityDatabase, trustedProxies: configuration.http.trustedProxies),
            authenticator: authenticator
        ).register(in: &router)
        let e2ee = E2EEService(store: store)
        self.e2ee = e2ee
        E2EERoutes(service: e2ee, authenticator: authenticator).register(in: &router)
        let callDirectory = CallDirectoryService(store: store)
        self.callDirectory = callDirectory
        CallDirectoryRoutes(service: callDirectory, authenticator: authenticator, adminKey: configuration.adminKey)
            .register(in: &router)
        let scheduledCalls = ScheduledCallService(store: store)
        self.scheduledCalls = scheduledCalls
        ScheduledCallRoutes(service: scheduledCalls, authenticator: authenticator).register(in: &router)
        DeviceRoutes(store: store, authenticator: authenticator, payloadKeys: payloadKeys).register(in: &router)
        PushPreferenceRoutes(store: store, authenticator: authenticator).register(in: &router)
        AdminRoutes(store: store, adminKey: configuration.adminKey).register(in: &router)
        ConsoleRoutes(store: store, adminKey: configuration.adminKey).register(in: &router)
        WebhookRoutes(
            store: store, adminKey: configuration.adminKey, settings: configuration.webhooks,
            deleted: { webhooks.forget(endpoint: $0) }
        ).register(in: &router)
        GatewayRoutes(
            store: store, adminKey: configuration.adminKey,
            service: GatewayService(
                store: store, directory: directory, ringTimeout: TimeInterval(configuration.calls.ringTimeoutSeconds),
                pushesQueued: { dispatcher.wake() },
                payloadKeys: payloadKeys),
            vault: payloadKeys, directory: directory, acceptSignatureV1: configuration.gateway.signatureV1 == .accept
        ).register(in: &router)
        self.router = router
        operatorSeparate = configuration.http.operatorListen != nil
        metrics.addGauge(
            "switchboard_push_jobs_pending", help: "Push jobs waiting to be sent, as of the dispatcher's last pass."
        ) {
            Double(dispatcher.pendingCount)
        }
        if media.managesRooms {
            metrics.addGauge(
                "switchboard_media_jobs_pending",
                help:
                    "Media withdrawals (remove a participant, delete a room) not yet confirmed by the media backend, as of the last pass."
            ) {
                Double(outbox.pendingCount(.media))
            }
        }
        metrics.addGauge(
            "switchboard_webhook_deliveries_pending",
            help: "Webhook deliveries not yet accepted by their endpoint (nor given up), as of the last pass."
        ) {
            Double(outbox.pendingCount(.webhook))
        }
        metrics.addGauge(
            "switchboard_event_waiters", help: "Held event requests (long polls and streams) waiting for events."
        ) {
            Double(store.hub.waiterCount)
        }
    }

    /// Creates the application with the production defaults.
    public convenience init(configuration: ServerConfiguration, database: any SQLStore, logger: Logger) throws {
        try self.init(configuration: configuration, database: database, logger: logger, metrics: Metrics())
    }

    /// Runs background work until cancelled: waiter timeouts and event retention.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.store.hub.run() }
            group.addTask { await self.store.listenForOtherInstances(logger: self.logger) }
            group.addTask { await self.pruneEventsPeriodically() }
            group.addTask { await self.dispatcher.run() }
            if let upkeep = database.upkeep {
                group.addTask { await self.every(upkeep.interval, upkeep.name) { try await upkeep.run() } }
            }
            group.addTask {
                await self.every(.seconds(1), "ring timeout sweep") { try await self.calls.sweepRingTimeouts() }
            }
            group.addTask {
                await self.every(.seconds(1), "live location expiry") { try await self.liveLocations.sweepExpired() }
            }
            if let relay {
                group.addTask { await relay.runMixer(environment: self.store.environment) }
                if database.isShared {
                    group.addTask {
                        await self.every(RelayAcrossInstances.interval, "relay across instances") {
                            try await RelayAcrossInstances.sync(relay, store: self.store)
                        }
                    }
                }
            }
            group.addTask {
                await self.outbox.run()
                await self.webhooks.shutdown()
            }
            if calls.media.managesRooms {
                let interval = Duration.seconds(configuration.calls.emptyRoomCheckSeconds)
                group.addTask {
                    await self.every(interval, "empty-room watchdog") { try await self.calls.checkEmptyRooms() }
                }
            }
            await group.waitForAll()
        }
    }

    /// Runs `work` now and then every `interval` until cancelled; failures are logged. It
    /// sleeps on the store's clock (so a test's manual clock drives it), named `name`.
    private func every(_ interval: Duration, _ name: String, _ work: @Sendable () async throws -> Void) async {
        await BackgroundLoop.$name.withValue(name) {
            while !Task.isCancelled {
                do {
                    try await work()
                } catch is CancellationError {
                    return
                } catch {
                    logger.error("\(name) failed", ["error": .string(String(describing: error))])
                }
                try? await store.environment.sleep(for: interval)
            }
        }
    }

    /// The configured media backend other than the relay (LiveKit, or none).
    static func mediaBackend(
        for configuration: ServerConfiguration, now: @escaping @Sendable () -> Date
    ) -> any MediaBackend {
        guard configuration.media.backend == .livekit,
            var components = URLComponents(string: configuration.media.livekit.url)
        else {
            return UnmanagedMedia()
        }
        components.scheme = components.scheme == "wss" ? "https" : "http"
        guard let apiBase = components.url else { return UnmanagedMedia() }
        return LiveKitRoomService(
            apiBase: apiBase, apiKey: configuration.media.livekit.apiKey,
            apiSecret: configuration.media.livekit.apiSecret,
            deadline: .milliseconds(configuration.media.livekit.deadlineMilliseconds), now: now)
    }

    /// The transport's question once a head with a body arrived: the route's body limit, or,
    /// when no route takes the request, its answer at once (no byte of the body is kept).
    public func admitBody(_ head: HTTPRequestHead, on listener: Listener = .main) -> HTTPBodyAdmission {
        let refusal: APIError
        switch match(method: head.method, path: head.path, on: listener) {
        case .found(let route, _, _):
            return .accept(maxBodyBytes: route.maxBodyBytes ?? Int.max)
        case .methodNotAllowed(let allowed):
            refusal = APIError.methodNotAllowed(allowed)
        case .notFound:
            refusal = APIError.notFound("no route for \(head.method) \(head.path)")
        case .badPath:
            refusal = APIError.validation("the path has a malformed percent-escape")
        }
        var response = refusal.response
        response.headers.set("X-Request-Id", Self.requestID(from: head.headers))
        metrics.recordRequest(route: "unmatched", method: head.method, status: response.status, seconds: 0)
        return .refuse(response)
    }

    /// The relay's token secret, one for every instance on the database: the first instance
    /// that needs it makes it (32 random bytes), every other one reads it.
    static func relaySecret(in database: any SQLStore) throws -> String {
        try database.transactionAtStart { executor in
            try SQLServerStateRepository(connection: executor).value(of: "relay_token_secret") {
                SecureRandom.token(byteCount: 32)
            }
        }
    }

    /// Whether `path` belongs to the operator listener: `/metrics`, `/admin` and below, and the
    /// operator console's pages (`/console`), which read `/admin/*`.
    static func isOperatorPath(_ path: String) -> Bool {
        path == "/metrics" || path == "/admin" || path.hasPrefix("/admin/") || path == "/console"
            || path.hasPrefix("/console/")
    }

    /// The router's match, with the paths the listener does not serve not found.
    private func match(method: String, path: String, on listener: Listener) -> Router.Match {
        if operatorSeparate {
            switch listener {
            case .main where Self.isOperatorPath(path): return .notFound
            // The browser SDK's modules are served on both: the console imports them.
            case .operatorOnly
            where !Self.isOperatorPath(path) && path != "/healthz" && path != "/readyz" && !path.hasPrefix("/sdk/"):
                return .notFound
            default: break
            }
        }
        return router.match(method: method, path: path)
    }

    /// The transport's handler.
    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        await handle(request, on: .main)
    }

    /// The transport's handler for one of the listeners. Inlined into ``handle(_:)``: one async
    /// frame less under every request, which a held long poll keeps for as long as it waits.
    @inline(__always)
    public func handle(_ request: HTTPRequest, on listener: Listener) async -> HTTPResponse {
        let started = ContinuousClock.now
        let requestID = Self.requestID(from: request.headers)
        let requestLogger = logger.with(["request.id": .string(requestID)])
        var routeLabel = "unmatched"
        var response: HTTPResponse
        switch match(method: request.method, path: request.path, on: listener) {
        case .found(let route, let parameters, let handler):
            routeLabel = route.pattern
            let context = RequestContext(
                request: request, parameters: parameters, requestID: requestID, logger: requestLogger)
            do {
                response = try await handler(context)
            } catch let error as APIError {
                response = error.response
            } catch is CancellationError where Task.isCancelled {
                // The client disconnected; the transport drops whatever is answered.
                response = APIError(.clientClosedRequest, "client closed the request").response
            } catch {
                requestLogger.error(
                    "unhandled error", ["error": .string(String(describing: error)), "route": .string(route.pattern)])
                response = APIError.internal.response
            }
        case .methodNotAllowed(let allowed):
            response = APIError.methodNotAllowed(allowed).response
        case .notFound:
            response = APIError.notFound("no route for \(request.method) \(request.path)").response
        case .badPath:
            response = APIError.validation("the path has a malformed percent-escape").response
        }
        response.headers.set("X-Request-Id", requestID)

        let seconds = (ContinuousClock.now - started).inSeconds
        // 499 (client closed request) as nginx counts it: the reply will be dropped.
        let status = Task.isCancelled ? 499 : response.status
        metrics.recordRequest(route: routeLabel, method: request.method, status: status, seconds: seconds)
        if requestLogger.isEnabled(.info) {
            requestLogger.info(
                "request",
                [
                    "method": .string(request.method), "path": .string(request.path), "route": .string(routeLabel),
                    "status": .int(status), "duration_ms": .double(seconds * 1000),
                    "remote": .string(request.remoteAddress),
                ])
        }
        return response
    }

    /// A client's `X-Request-Id` when it is short and plain, else a fresh random one.
    static func requestID(from headers: HTTPHeaders) -> String {
        if let given = headers["X-Request-Id"], (1...64).contains(given.utf8.count),
            given.utf8.allSatisfy({
                $0 == 45 || $0 == 46 || $0 == 95 || (48...57).contains($0) || (65...90).contains($0)
                    || (97...122).contains($0)
            })
        {
            return given
        }
        let number = requestCounter.wrappingAdd(1, ordering: .relaxed).newValue
        let text = String(number, radix: 16)
        return requestIDPrefix + String(repeating: "0", count: max(0, 8 - text.count)) + text
    }

    /// Request ids need to be unique, not secret: 8 random hex digits per process, then a counter.
    private static let requestIDPrefix: String = {
        let text = String(UInt32.random(in: .min ... .max), radix: 16)
        return String(repeating: "0", count: 8 - text.count) + text
    }()
    private static let requestCounter = Atomic<UInt64>(0)
}
