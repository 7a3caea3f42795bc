import Foundation
import SwitchboardKit
import SwitchboardWire

/// Where a simulated phone's VoIP pushes come from (the APNs emulator's inbox for its token).
public protocol PushSource: Sendable {
    /// Push payloads (JSON) after index `after`, waiting up to `wait` seconds for the first;
    /// and the index to ask after next time.
    func pushes(after: Int, wait: Double) async throws -> (payloads: [Data], cursor: Int)
}

/// One line of a phone's timeline.
public struct PhoneTimelineEntry: Sendable, Equatable, CustomStringConvertible {
    public let at: Date
    public let phone: String
    public let text: String
    public var description: String { "\(phone): \(text)" }
}

/// A coordinator notice with the time it happened.
public struct TimedNotice: Sendable, Equatable {
    public let at: Date
    public let notice: CallLedger.Notice
}

/// A phone for end-to-end tests and the demo: the SDK's `CallCoordinator` over a
/// `SimulatedCallSystem`, a push inbox, simulated media and an app state. A push to a killed
/// app launches it in the background first, as iOS does; in the foreground the app runs its
/// event feed.
public final class SimulatedPhone: Sendable {
    public enum AppState: String, Sendable { case foreground, background, killed }

    public let name: String
    public let userID: String
    public let client: SwitchboardClient
    public let device: SimulatedDevice
    public let media: SimulatedMedia
    /// The hex VoIP token this phone registers.
    public let pushToken: String
    let clock: any CallClock
    let pushSource: (any PushSource)?
    let systemConfiguration: SimulatedCallSystem.Configuration
    let ledgerConfiguration: CallLedger.Configuration
    /// Opens the encrypted VoIP payloads of a phone that registered a payload key.
    let payloadDecryptor: (any VoIPPayloadDecrypting)?
    let onTimeline: @Sendable (PhoneTimelineEntry) -> Void

    private struct State {
        var appState = AppState.killed
        var callSystem: SimulatedCallSystem?
        var coordinator: CallCoordinator?
        var feed: Task<Void, Never>?
        var pushLoop: Task<Void, Never>?
        var timeline: [PhoneTimelineEntry] = []
        var notices: [TimedNotice] = []
        var launches = 0
    }

    private let state = LockedState(State())

    public init(
        name: String, userID: String, client: SwitchboardClient, clock: any CallClock = SystemCallClock(),
        pushSource: (any PushSource)? = nil, pushToken: String? = nil,
        callSystem: SimulatedCallSystem.Configuration = SimulatedCallSystem.Configuration(),
        ledger: CallLedger.Configuration = CallLedger.Configuration(),
        media: SimulatedMedia.Behaviour = SimulatedMedia.Behaviour(),
        payloadDecryptor: (any VoIPPayloadDecrypting)? = nil,
        onTimeline: @escaping @Sendable (PhoneTimelineEntry) -> Void = { _ in }
    ) {
        self.payloadDecryptor = payloadDecryptor
        self.name = name
        self.userID = userID
        self.client = client
        self.clock = clock
        self.pushSource = pushSource
        self.pushToken = pushToken ?? (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        device = SimulatedDevice()
        self.media = SimulatedMedia(clock: clock, behaviour: media)
        systemConfiguration = callSystem
        ledgerConfiguration = ledger
        self.onTimeline = onTimeline
    }

    // MARK: State

    public var appState: AppState { state.withLock { $0.appState } }
    /// The current launch's call system (nil while killed before the first launch).
    public var callSystem: SimulatedCallSystem? { state.withLock { $0.callSystem } }
    public var coordinator: CallCoordinator? { state.withLock { $0.coordinator } }
    public var timeline: [PhoneTimelineEntry] { state.withLock { $0.timeline } }
    /// What the coordinator reported, in order.
    public var notices: [TimedNotice] { state.withLock { $0.notices } }

    /// When the first notice matching `predicate` happened.
    public func firstNotice(_ predicate: (CallLedger.Notice) -> Bool) -> Date? {
        state.withLock { $0.notices.first { predicate($0.notice) }?.at }
    }
    public var launches: Int { state.withLock { $0.launches } }

    /// Registers this phone's VoIP token with the server.
    public func registerForPushes(deviceID: UUID = UUID(), payloadKey: PayloadKeyRegistration? = nil) async throws {
        _ = try await client.registerVoIPDevice(
            deviceID: deviceID, pushToken: pushToken, environment: .sandbox, payloadKey: payloadKey)
    }

    /// Opens the app (launching it when killed) and starts its event feed.
    public func bringToForeground() async {
        if appState == .killed { launch(.foreground) }
        state.withLock { $0.appState = .foreground }
        note("app in foreground")
        await startFeed()
    }

    /// Sends the app to the background: its event feed stops (calls in progress keep the
    /// coordinator following the server).
    public func sendToBackground() {
        if appState == .killed { launch(.background) }
        let feed = state.withLock { state -> Task<Void, Never>? in
            state.appState = .background
            defer { state.feed = nil }
            return state.feed
        }
        feed?.cancel()
        note("app in background")
    }

    /// Kills the app: its coordinator and feed are gone; calls it showed are torn down by iOS.
    public func kill() {
        let (coordinator, feed, system) = state.withLock { state in
            defer {
                state.appState = .killed
                state.coordinator = nil
                state.feed = nil
            }
            return (state.coordinator, state.feed, state.callSystem)
        }
        feed?.cancel()
        coordinator?.shutdown()
        system?.reset()
        note("app killed")
    }

    /// Starts reading the push inbox; each push is delivered as PushKit would.
    public func startReceivingPushes() {
        guard let pushSource else { return }
        let task = Task { [self] in
            var cursor = 0
            while !Task.isCancelled {
                do {
                    let (payloads, next) = try await pushSource.pushes(after: cursor, wait: 10)
                    cursor = next
                    for payload in payloads { deliverPush(payload) }
                } catch {
                    if Task.isCancelled { return }
                    try? await Task.sleep(nanoseconds: 200_000_000)
                }
            }
        }
        state.withLock { $0.pushLoop = task }
    }

    /// A VoIP push arrives (launching a killed app in the background first).
    @discardableResult
    public func deliverPush(_ payload: Data, mustReport: Bool = true) -> Bool {
        let object = (try? JSONSerialization.jsonObject(with: payload) as? [String: Any]) ?? [:]
        return deliverPush(object, mustReport: mustReport)
    }

    @discardableResult
    public func deliverPush(_ payload: [String: Any], mustReport: Bool = true) -> Bool {
        if appState == .killed {
            guard !device.pushesStopped else { return false }
            launch(.background)
        }
        guard let system = callSystem, let coordinator else { return false }
        note("VoIP push for call \((payload["callId"] as? String ?? "?").prefix(8))")
        return system.deliverVoIPPush(payload, mustReport: mustReport, to: coordinator)
    }

    // MARK: The user

    /// Answers from the system UI.
    public func answer(_ callID: String) throws(CallSystemError) {
        note("user answers")
        try callSystem?.userAnswers(CallIdentity.uuid(forCallID: callID))
    }

    /// Declines or hangs up from the system UI.
    public func hangUp(_ callID: String) throws(CallSystemError) {
        note("user ends the call")
        try callSystem?.userEnds(CallIdentity.uuid(forCallID: callID))
    }

    /// Calls a conversation or group from the app.
    public func dial(
        scopeKind: ScopeKind, scopeID: String, mode: CallMode = .audio, handle: String
    ) async throws -> String {
        if appState == .killed { await bringToForeground() }
        guard let coordinator else { throw CallSystemError.other("app not running") }
        note("user dials \(handle)")
        return try await coordinator.startCall(scopeKind: scopeKind, scopeID: scopeID, mode: mode, handle: handle)
    }

    /// Joins an active group call from the app (after missing or declining it).
    public func join(_ callID: String, handle: String) async throws {
        if appState == .killed { await bringToForeground() }
        guard let coordinator else { throw CallSystemError.other("app not running") }
        note("user joins the call")
        try await coordinator.joinCall(callID, handle: handle)
    }

    /// The call as the system shows it.
    public func systemCall(_ callID: String) -> SimulatedCallSystem.Call? {
        callSystem?.call(CallIdentity.uuid(forCallID: callID))
    }

    /// Waits until the call system's callbacks and the coordinator's requests are done.
    public func settle() async {
        for _ in 0..<50 {
            guard let system = callSystem else { return }
            await system.drain()
            await coordinator?.settle()
            if system.pendingCallbacks == 0 { return }
        }
    }

    /// Stops everything (end of a test or demo).
    public func shutDown() {
        let (coordinator, feed, pushLoop) = state.withLock { ($0.coordinator, $0.feed, $0.pushLoop) }
        feed?.cancel()
        pushLoop?.cancel()
        coordinator?.shutdown()
    }

    // MARK: Launching

    private func launch(_ appState: AppState) {
        device.launch()
        let system = SimulatedCallSystem(device: device, clock: clock, configuration: systemConfiguration) {
            [weak self] in
            self?.killedBySystem()
        }
        media.attach(system)
        let coordinator = CallCoordinator(
            userID: userID, backend: client, callSystem: system, media: { [media] in media.makeSession($0) },
            clock: clock,
            configuration: ledgerConfiguration, payloadDecryptor: payloadDecryptor,
            onNotice: { [weak self] notice in self?.record(notice) })
        state.withLock { state in
            state.appState = appState
            state.callSystem = system
            state.coordinator = coordinator
            state.launches += 1
        }
        note("app launched in \(appState.rawValue)")
    }

    private func killedBySystem() {
        let (coordinator, feed) = state.withLock { state in
            defer {
                state.appState = .killed
                state.coordinator = nil
                state.feed = nil
            }
            return (state.coordinator, state.feed)
        }
        feed?.cancel()
        coordinator?.shutdown()
        note("killed by iOS")
    }

    private func startFeed() async {
        guard let coordinator, state.withLock({ $0.feed == nil }) else { return }
        let cursor = (try? await client.me().eventCursor) ?? 0
        let feed = EventFeed(client: client, cursorStore: InMemoryCursorStore(), startCursor: cursor)
        let task = Task {
            do {
                for try await update in feed {
                    guard case .events(let events) = update else { return }
                    await coordinator.handle(events: events)
                }
            } catch {}
        }
        state.withLock { $0.feed = task }
    }

    private func record(_ notice: CallLedger.Notice) {
        let timed = TimedNotice(at: clock.now, notice: notice)
        state.withLock { $0.notices.append(timed) }
        note(Self.describe(notice))
    }

    func note(_ text: String) {
        let entry = PhoneTimelineEntry(at: clock.now, phone: name, text: text)
        state.withLock { $0.timeline.append(entry) }
        onTimeline(entry)
    }

    /// A notice in words, with the call id shortened to its first 8 characters.
    public static func describe(_ notice: CallLedger.Notice) -> String {
        func short(_ id: String) -> String { String(id.prefix(8)) }
        return switch notice {
        case .incoming(let callID, let origin): "incoming call \(short(callID)) reported (woken by \(origin.rawValue))"
        case .dialing(let callID): "dialing, call \(short(callID))"
        case .joining(let callID): "joining call \(short(callID))"
        case .connected(let callID): "connected \(short(callID))"
        case .audioStarted(let callID): "audio started \(short(callID))"
        case .audioStopped(let callID): "audio stopped \(short(callID))"
        case .ended(let callID, let reason, let refusal):
            "call \(short(callID)) ended" + (reason.map { " (\($0))" } ?? " here")
                + (refusal.map { ", refused: \($0)" } ?? "")
        case .tokenRejected: "session token refused (401)"
        }
    }
}
