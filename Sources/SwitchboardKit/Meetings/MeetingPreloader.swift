import Foundation

/// What the ``MeetingPreloader`` asks the server. ``ScheduledCallClient`` is the real one.
public protocol MeetingPreloadBackend: Sendable {
    /// The upcoming scheduled calls of the user's groups (`GET /scheduled-calls`).
    func upcomingScheduledCalls() async throws -> [ScheduledCall]
    /// A pre-authorisation for one (`POST /scheduled-calls/{id}/preauthorization`).
    func preauthorize(_ scheduledCallID: String) async throws -> CallPreauthorization
}

extension ScheduledCallClient: MeetingPreloadBackend {
    public func upcomingScheduledCalls() async throws -> [ScheduledCall] {
        try await upcoming(limit: MeetingPreloader.listLimit)
    }
}

/// Where a join finds a pre-authorisation held for its call: ``MeetingPreloader`` is the one
/// the SDK has; `CallCoordinator.joinCall(_:handle:groupID:preauthorization:)` asks it.
public protocol CallPreauthorizationSource: Sendable {
    /// A valid pre-authorisation for the group call `callID` (of group `groupID`, when known),
    /// forgotten as it is handed out (single use); nil when none is held.
    func take(forCall callID: String, groupID: String?) async -> CallPreauthorization?
    /// The join `preauthorization` was taken for threw (no answer, or refused): whether the
    /// server used it is unknown, so the source may get a fresh one for the next attempt. The
    /// default does nothing.
    func joinFailed(with preauthorization: CallPreauthorization) async
}

extension CallPreauthorizationSource {
    public func joinFailed(with preauthorization: CallPreauthorization) async {}
}

/// Keeps a valid pre-authorisation ready for each of the next meetings (scheduled group calls),
/// so joining one gets the media token in the join's answer: one round trip less on the way to
/// audio. ``MeetingPreloadPlanner`` decides what to ask for and when; this performs it.
///
/// It reads the list when it starts, when an event says a scheduled call changed
/// (``handle(events:)``), and when a request or a read failed (at the next wake); it asks for
/// pre-authorisations and wakes itself at the planner's times on the injected clock. A failed
/// request is asked again at the next wake and never reaches the user: the join then simply
/// takes its usual path.
///
/// ```swift
/// let preloader = MeetingPreloader(backend: ScheduledCallClient(client: client))
/// let coordinator = CallCoordinator(…, preauthorizations: preloader)
/// Task { await preloader.run() }                  // or in a service group
/// // event feed: preloader.handle(events: events)
/// // joining:    try await coordinator.joinCall(callID, handle: "Team", groupID: groupID)
/// ```
public actor MeetingPreloader: CallPreauthorizationSource {
    /// How many scheduled calls one read of the list asks for.
    public static let listLimit = 20
    /// A pre-authorisation's validity (the server's), the longest the preloader trusts one.
    public static let validity = 600.0

    private enum Poke: Sendable { case refresh, wake }

    let backend: any MeetingPreloadBackend
    let clock: any CallClock
    let planner: MeetingPreloadPlanner
    private let pokes: AsyncStream<Poke>
    private let poke: AsyncStream<Poke>.Continuation

    private var meetings: [MeetingPreloadPlanner.Meeting] = []
    private var held: [String: (preauthorization: CallPreauthorization, expiresAt: Date)] = [:]
    private var used: Set<String> = []
    private var ended: Set<String> = []
    private var failedAt: [String: Date] = [:]
    /// The last read of the list failed at this time: read again at the next wake.
    private var refreshFailedAt: Date?
    private var updating = false
    private var updateAgain = false
    private var scheduledWake: Date?

    /// - Parameters:
    ///   - clock: the time it plans by and wakes on (a manual clock in tests).
    public init(
        backend: any MeetingPreloadBackend, clock: any CallClock = SystemCallClock(),
        planner: MeetingPreloadPlanner = MeetingPreloadPlanner()
    ) {
        self.backend = backend
        self.clock = clock
        self.planner = planner
        (pokes, poke) = AsyncStream.makeStream(of: Poke.self)
    }

    deinit { poke.finish() }

    // MARK: Running

    /// Reads the list, then keeps pre-authorisations ready until the task is cancelled. Run it
    /// once (from one task, or a service group).
    public func run() async {
        await refresh()
        for await poke in pokes {
            if Task.isCancelled { return }
            switch poke {
            case .refresh: await refresh()
            case .wake: if refreshFailedAt != nil { await refresh() } else { await update() }
            }
        }
    }

    /// Whether a batch of the event feed says a scheduled call was scheduled, cancelled or started.
    public static func needsRefresh(_ events: [Event]) -> Bool {
        events.contains { $0.kind == .scheduledCallChanged }
    }

    /// Events from the app's feed: a `scheduled_call_changed` makes ``run()`` read the list again.
    public nonisolated func handle(events: [Event]) {
        if Self.needsRefresh(events) { poke.yield(.refresh) }
    }

    /// Reads the list now and plans from it (``run()`` does this when it should).
    public func refresh() async {
        do {
            let list = try await backend.upcomingScheduledCalls()
            meetings = list.compactMap(MeetingPreloadPlanner.Meeting.init)
            refreshFailedAt = nil
            let ids = Set(meetings.map(\.id))
            used.formIntersection(ids)
            ended.formIntersection(ids)
            failedAt = failedAt.filter { ids.contains($0.key) }
        } catch {
            // The old list stands; it is read again at the next wake.
            refreshFailedAt = clock.now
        }
        await update()
    }

    /// Plans at the clock's now and performs the plan: forgets what it drops, asks for what it
    /// requests, and schedules the next wake (``run()`` does this at each wake).
    public func update() async {
        if updating {
            updateAgain = true
            return
        }
        updating = true
        defer { updating = false }
        var rounds = 0
        repeat {
            updateAgain = false
            rounds += 1
            let plan = planner.plan(input)
            for id in plan.drop { held[id] = nil }
            for id in plan.request { await request(id) }
            if plan.request.isEmpty || rounds >= 3 {
                schedule(plan.wake)
                if !updateAgain { return }
            }
        } while true
    }

    // MARK: Joining

    /// A valid pre-authorisation for the group call `callID`, forgotten as it is handed out:
    /// the meeting that started it; else, with `groupID`, the one of that group's meetings not
    /// yet tied to another call whose start is nearest to now. Nil when none is held (the join
    /// then takes its usual path).
    public func take(forCall callID: String, groupID: String?) -> CallPreauthorization? {
        let now = clock.now
        let valid = meetings.filter { held[$0.id].map { $0.expiresAt > now } ?? false }
        let meeting =
            valid.first { $0.callID == callID }
            ?? groupID.flatMap { group in
                valid.filter { $0.groupID == group && $0.callID == nil }
                    .min { abs($0.startsAt.timeIntervalSince(now)) < abs($1.startsAt.timeIntervalSince(now)) }
            }
        guard let meeting, let entry = held.removeValue(forKey: meeting.id) else { return nil }
        used.insert(meeting.id)
        return entry.preauthorization
    }

    /// ``take(forCall:groupID:)`` by group only: the one of `groupID`'s meetings not yet tied to
    /// a call whose start is nearest to now.
    public func take(forGroup groupID: String) -> CallPreauthorization? {
        take(forCall: "", groupID: groupID)
    }

    /// A join with a pre-authorisation it handed out threw: the meeting is looked after again,
    /// and a fresh one asked for at once when it is due (the old one may have been used).
    public func joinFailed(with preauthorization: CallPreauthorization) {
        guard used.remove(preauthorization.scheduledCallId) != nil else { return }
        poke.yield(.wake)
    }

    // MARK: Looking in

    /// The valid pre-authorisations held now, soonest meeting first.
    public var preauthorizations: [CallPreauthorization] {
        let now = clock.now
        let order = Dictionary(
            meetings.enumerated().map { ($0.element.id, $0.offset) }, uniquingKeysWith: { first, _ in first })
        return held.values.filter { $0.expiresAt > now }.map(\.preauthorization).sorted {
            (order[$0.scheduledCallId] ?? .max, $0.scheduledCallId) < (
                order[$1.scheduledCallId] ?? .max, $1.scheduledCallId
            )
        }
    }

    /// When it wakes next; nil: nothing is due.
    public var nextWake: Date? { scheduledWake }

    /// The meetings of the last list read.
    public var upcoming: [MeetingPreloadPlanner.Meeting] { meetings }

    // MARK: Helpers

    private var input: MeetingPreloadPlanner.Input {
        MeetingPreloadPlanner.Input(
            now: clock.now, meetings: meetings,
            held: held.map { MeetingPreloadPlanner.Held(scheduledCallID: $0.key, expiresAt: $0.value.expiresAt) },
            used: used, ended: ended, failedAt: failedAt)
    }

    private func request(_ id: String) async {
        do {
            let preauthorization = try await backend.preauthorize(id)
            let received = clock.now
            // Trusted until the earlier of the server's expiry and its validity after arrival,
            // so a device clock behind the server's never keeps an expired one.
            let stated =
                ISO8601Timestamp.date(from: preauthorization.expiresAt) ?? received.addingTimeInterval(Self.validity)
            guard !used.contains(id) else { return }
            held[id] = (preauthorization, min(stated, received.addingTimeInterval(Self.validity)))
            failedAt[id] = nil
        } catch let error as SwitchboardAPIError where error.code == .scheduledCallEnded || error.status == 404 {
            // Cancelled, ended, or no longer ours: not asked for again until the list says so.
            ended.insert(id)
            held[id] = nil
        } catch {
            failedAt[id] = clock.now
        }
    }

    private func schedule(_ planned: Date?) {
        let now = clock.now
        var wake = planned
        if let failed = refreshFailedAt {
            let retry = failed.addingTimeInterval(planner.configuration.retryInterval)
            wake = min(wake ?? retry, retry)
        }
        guard let wake else { return }
        // A timer already set for this time or earlier (still ahead) serves: its wake re-plans.
        if let scheduled = scheduledWake, scheduled > now, scheduled <= wake { return }
        scheduledWake = wake
        let poke = self.poke
        clock.schedule(after: .milliseconds(Int((max(wake.timeIntervalSince(now), 0) * 1000).rounded(.up)))) {
            poke.yield(.wake)
        }
    }
}
