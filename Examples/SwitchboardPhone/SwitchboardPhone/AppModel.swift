import Foundation
import SwitchboardCallKit
import SwitchboardKit

/// How the user signs in on a server: an existing account, or a new one (`POST /auth/register`).
enum Credentials: Sendable {
    case signIn(username: String, password: String)
    case signUp(username: String, password: String, displayName: String)
}

/// The field policies a session runs (SDK guide, "Field policies"): each with what feeds it.
struct FieldPolicies {
    /// Reachability (NWPathMonitor) into the reconnect plans of the feed and the coordinator.
    let reconnect: ReconnectMonitor
    let reachability: NetworkPathReachability
    /// The app's memory footprint, sampled every 2 s, into the calls' shedding plans.
    let memory: MemoryPressureMonitor
    let memorySource: MemoryPressureSource
    /// Pre-authorisations for the groups' scheduled meetings, so joining one skips a round trip.
    let meetings: MeetingPreloader

    init(client: SwitchboardClient) {
        reconnect = ReconnectMonitor()
        reachability = NetworkPathReachability(reporting: reconnect)
        memory = MemoryPressureMonitor(sampler: PhysicalFootprintSampler())
        memorySource = MemoryPressureSource(monitor: memory)
        meetings = MeetingPreloader(backend: ScheduledCallClient(client: client))
    }
}

/// One signed-in session on one server: its client and the connections under it, its call
/// coordinator (a coordinator serves one user), its event feed and its field policies.
@MainActor
final class SignedInSession {
    let address: ServerAddress
    let user: User
    let client: SwitchboardClient
    let coordinator: CallCoordinator
    let policies: FieldPolicies
    let cursorStore: DefaultsCursorStore
    /// The client's connections, closed when the session ends.
    let transports: [any HTTPTransport]
    var feedTask: Task<Void, Never>?
    var meetingsTask: Task<Void, Never>?
    /// The user's Call Directory list, kept in the app group for the extension (nil when the
    /// app group is not provisioned).
    let callDirectory: CallDirectorySync?

    init(
        address: ServerAddress, user: User, client: SwitchboardClient, coordinator: CallCoordinator,
        policies: FieldPolicies, transports: [any HTTPTransport]
    ) {
        self.address = address
        self.user = user
        self.client = client
        self.coordinator = coordinator
        self.policies = policies
        self.transports = transports
        cursorStore = DefaultsCursorStore(server: address, userID: user.id)
        callDirectory = FileCallDirectoryStorage(appGroup: AppGroup.identifier).map { storage in
            CallDirectorySync(
                client: CallDirectoryClient(client: client), userID: user.id, storage: storage,
                reload: CallDirectoryReloader(extensionIdentifier: AppGroup.callDirectoryExtension).reload)
        }
    }
}

/// The app's state and everything it does: sign-in and sign-up, the session's event feed,
/// contacts, calls, and the server change. Views read it and call its methods.
///
/// Created synchronously in `application(_:didFinishLaunchingWithOptions:)`, in the order
/// the SDK requires (README, "Integrating on iOS"): CallKit's one provider, then the stored
/// session's coordinator, then PushKit, so a VoIP push that launched the app finds its
/// coordinator before PushKit's completion must run.
@MainActor
final class AppModel: ObservableObject {
    /// A live call as the calls section shows it.
    struct CallRow: Identifiable, Equatable {
        let id: String
        let name: String
        let incoming: Bool
        let stage: CallLedger.Stage
        let muted: Bool

        var canAnswer: Bool { incoming && stage == .ringing }

        var status: String {
            switch stage {
            case .ringing: incoming ? "Incoming call" : "Ringing…"
            case .answering: "Answering…"
            case .dialing: "Calling…"
            case .connecting: "Connecting…"
            case .active: muted ? "Connected, muted" : "Connected"
            case .ended: "Ended"
            }
        }
    }

    enum FeedStatus: String {
        case offline = "Stopped"
        case following = "Following"
    }

    /// The server of the session, or the last one signed in to.
    @Published private(set) var server: ServerAddress?
    @Published private(set) var user: User?
    @Published var friends: [Friend] = []
    @Published var requests = FriendRequestList(incoming: [], outgoing: [])
    @Published var groups: [Group] = []
    @Published private(set) var calls: [CallRow] = []
    @Published var feedStatus = FeedStatus.offline
    @Published var alertShown = false
    private(set) var alertText = ""

    let callSystem: CallKitCallSystem
    let router: SessionRouter
    let pushReceiver: VoIPPushReceiver
    let deviceID: UUID
    let pushEnvironment: PushEnvironment
    private let audio: AudioEngineRelayIO
    /// Opens VoIP pushes the server sealed under this installation's key.
    private let decryptor: CryptoKitVoIPPayloadDecryptor
    private let store: SessionStore
    private(set) var session: SignedInSession?
    private var mutedCalls: Set<String> = []
    private let notices: AsyncStream<CallCoordinator.Notice>
    private let noticeInput: AsyncStream<CallCoordinator.Notice>.Continuation
    private var started = false

    init(store: SessionStore = SessionStore()) {
        self.store = store
        // 1. CallKit's one provider, and the microphone and speaker every call's relay uses.
        let callSystem = CallKitCallSystem(
            configuration: CallKitConfiguration(supportsVideo: false),
            audioSessionFailed: { Log.calls("audio session: \($0)") })
        let audio = AudioEngineRelayIO()
        let router = SessionRouter(callSystem: callSystem)
        let (notices, noticeInput) = AsyncStream.makeStream(of: CallCoordinator.Notice.self)
        self.callSystem = callSystem
        self.audio = audio
        self.router = router
        self.notices = notices
        self.noticeInput = noticeInput
        deviceID = store.deviceID
        pushEnvironment = .ofThisBuild
        let payloadKey = store.payloadKey()
        let decryptor = CryptoKitVoIPPayloadDecryptor(keys: [payloadKey])
        self.decryptor = decryptor

        // 2. The stored session's coordinator, before PushKit can deliver anything.
        let saved = store.load()
        var restored: SignedInSession?
        if let saved, let address = try? ServerAddress(parsing: saved.server) {
            let session = Self.makeSession(
                address: address, user: saved.user, token: saved.token, callSystem: callSystem, audio: audio,
                decryptor: decryptor, notices: noticeInput)
            router.install(client: session.client, coordinator: session.coordinator)
            restored = session
        }

        // 3. PushKit last: from here a push may arrive at any moment.
        // The payload key goes with the VoIP token: the server seals the caller's name under it.
        pushReceiver = VoIPPushReceiver(
            handler: router, registrar: router, deviceID: deviceID, environment: pushEnvironment,
            payloadKey: payloadKey.registration,
            registrationFailed: { error in
                // Signed out: the token is registered again after the next login.
                guard !(error.underlying is SessionRouter.NotSignedIn) else { return }
                Log.push(error.description)
            })

        session = restored
        user = restored?.user
        server = restored?.address ?? store.lastServer.flatMap { try? ServerAddress(parsing: $0) }
        savedCursor = saved?.eventCursor
    }

    /// The login's event cursor of the restored session (its feed's start when none was saved).
    private var savedCursor: Int64?

    /// Starts what runs while the app runs: the token's registration loop, the coordinator's
    /// notices, and the restored session's feed. Called once, after `init`.
    func start() {
        guard !started else { return }
        started = true
        let receiver = pushReceiver
        Task { await receiver.run() }
        Task { [notices] in await Self.relay(notices, to: self) }
        if let session { connect(session, startCursor: savedCursor ?? 0) }
    }

    // MARK: Signing in and out

    /// Signs in (or creates the account) on the server typed in `serverText`.
    func signIn(serverText: String, credentials: Credentials) async throws {
        let address = try ServerAddress(parsing: serverText)
        let auth = try await Self.authenticate(credentials, at: address)
        if session != nil { dropCaches(of: await signOutOfServer(tellServer: true)) }
        adopt(auth, at: address)
    }

    func signOut() async {
        dropCaches(of: await signOutOfServer(tellServer: true))
    }

    /// Moves the app to another server, in this one place.
    ///
    /// The address and the credentials are checked first (a typo or a wrong password
    /// changes nothing); then, in order:
    /// 1. it signs out of the old server, which ends the session there and with it this
    ///    phone's push binding, so the old server no longer rings it;
    /// 2. it drops what was cached from the old server: contacts, calls, the event cursor,
    ///    the HTTP connections;
    /// 3. it connects to the new server: a new coordinator, the VoIP token registered there,
    ///    and the event feed reconnected from the new session's cursor.
    func changeServer(to serverText: String, credentials: Credentials) async throws {
        let address = try ServerAddress(parsing: serverText)
        guard calls.isEmpty else { throw AppError.callInProgress }
        let auth = try await Self.authenticate(credentials, at: address)
        let old = await signOutOfServer(tellServer: true)  // 1
        dropCaches(of: old)  // 2
        adopt(auth, at: address)  // 3
    }

    /// The server refused the token (401 on the feed or during a call): the session is over.
    func sessionExpired() async {
        dropCaches(of: await signOutOfServer(tellServer: false))
        show("Your session on this server ended. Sign in again.")
    }

    /// Ends the session: nothing follows it any more, pushes are no longer routed to it, its
    /// token leaves the keychain, and (when `tellServer`) the server ends it too, unbinding
    /// this phone's push token. Returns the ended session for `dropCaches(of:)`.
    private func signOutOfServer(tellServer: Bool) async -> SignedInSession? {
        guard let session else { return nil }
        self.session = nil
        user = nil
        feedStatus = .offline
        session.feedTask?.cancel()
        session.meetingsTask?.cancel()
        session.policies.reachability.stop()
        session.policies.memorySource.stop()
        router.clear()
        store.clear()
        // A call still live (the token was refused mid-call) must not stay on screen.
        for entry in session.coordinator.liveCallIDs.compactMap(session.coordinator.call) {
            callSystem.reportCallEnded(uuid: entry.uuid, at: Date(), reason: .failed)
        }
        session.coordinator.shutdown()
        if tellServer {
            do { try await session.client.logout() } catch { Log.app("logout: \(error)") }
        }
        session.transports.forEach { $0.invalidate() }
        return session
    }

    /// Forgets what came from a session's server.
    private func dropCaches(of session: SignedInSession?) {
        session?.cursorStore.remove()
        // The phone stops labelling and blocking with the old user's list.
        if let directory = session?.callDirectory {
            Task { do { try await directory.clear() } catch { Log.app("call directory: \(error)") } }
        }
        friends = []
        requests = FriendRequestList(incoming: [], outgoing: [])
        groups = []
        calls = []
        mutedCalls = []
        URLCache.shared.removeAllCachedResponses()
    }

    /// Makes a fresh login the app's session and connects it.
    private func adopt(_ auth: AuthSession, at address: ServerAddress) {
        store.save(
            SessionStore.Saved(
                server: address.description, token: auth.token, user: auth.user, eventCursor: auth.eventCursor))
        let session = Self.makeSession(
            address: address, user: auth.user, token: auth.token, callSystem: callSystem, audio: audio,
            decryptor: decryptor, notices: noticeInput)
        // A fresh login consumes events after its own cursor, not an older saved one.
        session.cursorStore.remove()
        router.install(client: session.client, coordinator: session.coordinator)
        self.session = session
        user = auth.user
        server = address
        connect(session, startCursor: auth.eventCursor)
    }

    /// Registers the VoIP token on the session's server, starts its feed, takes the snapshot.
    private func connect(_ session: SignedInSession, startCursor: Int64) {
        pushReceiver.registerCurrentToken()
        session.policies.reachability.start()
        session.policies.memorySource.start()
        let meetings = session.policies.meetings
        session.meetingsTask = Task { await meetings.run() }
        follow(session, startCursor: startCursor)
        Task {
            await refreshContacts()
            await catchUpCalls()
            await Self.refresh(session.callDirectory)
        }
    }

    /// Brings the Call Directory extension's list up to the server's (at sign-in, at launch,
    /// on `call_directory_changed`). A failure waits for the next change or launch: the list
    /// the system holds stays as it was.
    nonisolated static func refresh(_ directory: CallDirectorySync?) async {
        guard let directory else { return }
        do { try await directory.refresh() } catch { Log.app("call directory: \(error)") }
    }

    private static func makeSession(
        address: ServerAddress, user: User, token: String, callSystem: CallKitCallSystem, audio: AudioEngineRelayIO,
        decryptor: CryptoKitVoIPPayloadDecryptor, notices: AsyncStream<CallCoordinator.Notice>.Continuation
    ) -> SignedInSession {
        let requests = HedgingTransport(), events = URLSessionTransport(), callEvents = HedgingTransport(lanes: 2)
        let client = SwitchboardClient(
            baseURL: address.baseURL, token: token, transport: requests, eventTransport: events,
            callEventTransport: callEvents)
        let policies = FieldPolicies(client: client)
        let coordinator = CallCoordinator(
            userID: user.id, backend: client, callSystem: callSystem,
            // The server's built-in relay carries the audio; a new media session per call.
            media: { _ in
                RelayMediaSession(server: address.baseURL, transport: URLSessionRelayTransport(), audio: audio)
            },
            // The answer deadline follows the network's measured round trips (from the client).
            configuration: CallLedger.Configuration(adaptiveAnswerDeadline: true),
            payloadDecryptor: decryptor, reconnect: policies.reconnect, memoryPressure: policies.memory,
            preauthorizations: policies.meetings,
            onNotice: { notices.yield($0) })
        return SignedInSession(
            address: address, user: user, client: client, coordinator: coordinator, policies: policies,
            transports: [requests, events, callEvents])
    }

    nonisolated private static func authenticate(
        _ credentials: Credentials, at address: ServerAddress
    ) async throws -> AuthSession {
        let transport = URLSessionTransport()
        defer { transport.invalidate() }
        let client = SwitchboardClient(baseURL: address.baseURL, transport: transport, eventTransport: transport)
        do {
            switch credentials {
            case .signIn(let username, let password):
                return try await client.login(username: username, password: password)
            case .signUp(let username, let password, let displayName):
                return try await client.register(username: username, password: password, displayName: displayName)
            }
        } catch let error as SwitchboardAPIError where error.status == 0 {
            throw AppError.unreachable(address)  // names the address tried, not the current one
        }
    }

    // MARK: Calls

    /// What the coordinator told: the calls section is redrawn from its view of the calls.
    func noticed(_ notice: CallCoordinator.Notice) async {
        switch notice {
        case .tokenRejected:
            await sessionExpired()
            return
        case .ended(let callID, _, let refusal):
            mutedCalls.remove(callID)
            if refusal != nil { show("The call was not shown: iOS refused it (Do Not Disturb or a blocked caller).") }
        default:
            break
        }
        refreshCallRows()
    }

    func refreshCallRows() {
        guard let coordinator = session?.coordinator else {
            calls = []
            return
        }
        calls = coordinator.liveCallIDs.compactMap(coordinator.call).map { entry in
            CallRow(
                id: entry.callID, name: entry.update.callerName ?? entry.update.handle,
                incoming: entry.direction == .incoming,
                stage: entry.stage, muted: mutedCalls.contains(entry.callID))
        }
    }

    /// Places an audio call in a conversation or group; CallKit shows it, the coordinator
    /// follows it to the end.
    func placeCall(scopeKind: ScopeKind, scopeID: String, name: String) async {
        guard let session else { return }
        do {
            // A group's call already running (its scheduled meeting, say) is joined, with the
            // meeting's pre-authorisation when the preloader holds one.
            if scopeKind == .group,
                let running = try await session.client.activeCalls().first(where: {
                    $0.scopeKind == .group && $0.scopeId == scopeID && $0.state == .active
                })
            {
                try await session.coordinator.joinCall(running.id, handle: name, groupID: scopeID)
            } else {
                try await session.coordinator.startCall(
                    scopeKind: scopeKind, scopeID: scopeID, mode: .audio, handle: name)
            }
        } catch {
            report(error)
        }
        refreshCallRows()
    }

    /// The app's own answer button: it goes through CallKit like a lock-screen answer.
    func answer(_ row: CallRow) { session?.coordinator.answer(row.id) }

    func end(_ row: CallRow) { session?.coordinator.end(row.id) }

    func toggleMute(_ row: CallRow) {
        let muted = !mutedCalls.contains(row.id)
        if muted { mutedCalls.insert(row.id) } else { mutedCalls.remove(row.id) }
        session?.coordinator.setMuted(row.id, muted)
        refreshCallRows()
    }

    /// Calls that rang or ran while the app was not following: each is handed to the
    /// coordinator as a `call_changed`, the event stream's path (SPEC §4 rule 3), so a call
    /// already reported from a push is recognised by its UUID and not shown twice.
    func catchUpCalls() async {
        guard let session else { return }
        do {
            let active = try await session.client.activeCalls()
            let events = active.map { Event(id: 0, kind: EventKind.callChanged, callId: $0.id, createdAt: "") }
            await session.coordinator.handle(events: events)
        } catch {
            Log.calls("active calls: \(error)")
        }
        refreshCallRows()
    }

    // MARK: Messages to the user

    func show(_ text: String) {
        alertText = text
        alertShown = true
    }

    /// Shows an error, or ends the session when the server refused its token.
    func report(_ error: any Error) {
        if error is CancellationError { return }  // the session ended or its feed was replaced
        if let error = error as? SwitchboardAPIError, error.status == 401, session != nil {
            Task { await sessionExpired() }
            return
        }
        show(describe(error))
    }

    /// A sentence for an error of this app.
    func describe(_ error: any Error) -> String {
        switch error {
        case let error as ServerAddressError:
            return error.description
        case let error as AppError:
            return error.description
        case let error as SwitchboardAPIError where error.status == 0:
            return server.map { AppError.unreachable($0).description } ?? "Cannot reach the server."
        case let error as SwitchboardAPIError:
            return error.message.isEmpty ? "The server answered \(error.status) \(error.code)." : error.message
        default:
            return String(describing: error)
        }
    }
}

/// What the app itself refuses.
enum AppError: Error, CustomStringConvertible {
    case callInProgress
    /// No answer from the server at this address.
    case unreachable(ServerAddress)

    var description: String {
        switch self {
        case .callInProgress:
            return "End the call first."
        case .unreachable(let address):
            var text = "Cannot reach the server at \(address.description)."
            if address.scheme == .http, !address.host.isLocal {
                // App Transport Security: NSAllowsLocalNetworking covers local addresses only.
                text += " iOS allows plain http only on the local network: use https://, or the server's local address."
            }
            return text
        }
    }
}

/// The app's log lines, by category (NSLog: they show in Xcode's console and Console.app).
enum Log {
    static func app(_ text: String) { NSLog("[app] %@", text) }
    static func calls(_ text: String) { NSLog("[calls] %@", text) }
    static func push(_ text: String) { NSLog("[push] %@", text) }
}
