import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends requests over several connections ("lanes", each a transport with a connection pool
/// of its own) and hedges the ones that are safe to repeat: when a copy has not been answered
/// within ``HedgePolicy/hedgeDelay`` (derived from the fastest recent round trip), the same request
/// goes out on the next lane, and the first success wins.
///
/// On a lossy network the packets of different TCP connections are lost independently, so a
/// request stuck behind a lost segment (a retransmission timeout of 200 ms or more, doubling)
/// is overtaken by its copy. With no lane warm (a woken app, or one idle for long), a
/// repeatable request goes on every lane at once, so several handshakes race where a single
/// lost SYN costs a whole second. On a good network with warm connections requests answer
/// well inside the delay and nothing is sent twice.
///
/// Only requests sent with `repeatable: true` are hedged: ones the server treats the same way
/// however often they arrive (`SwitchboardClient` marks reads, call creation with its
/// `clientId`, accept, decline, leave, cancel and media tokens). A copy answered 409 — what
/// a copy gets when another copy of the same change landed first — is held back while another
/// copy may still succeed.
///
/// ```swift
/// let client = SwitchboardClient(baseURL: url, token: token, transport: HedgingTransport(lanes: 3))
/// ```
public final class HedgingTransport: HTTPTransport {
    private struct State {
        var policy: HedgePolicy
        var inFlight: [Int]
        /// When each lane last got an answer (monotonic seconds); nil while it never did.
        var lastAnswer: [Double?]
        /// Lanes with a warming request out.
        var warming: Set<Int> = []
        /// Where warming requests go: `/healthz` on the server the first request went to.
        var warmURL: URL?
    }

    /// A lane idle this long (seconds) gets a warming request when another request goes out,
    /// so its connection is open when a hedge needs it: below the server's 75 s keep-alive
    /// and common NAT idle timeouts.
    public static let keepWarmSeconds = 30.0

    /// After a cold start's copies, how long (seconds) before a second copy goes on every lane,
    /// each on a connection of its own: a lost SYN is sent again only after one second (RFC
    /// 6298's initial timeout), so a new handshake then races each stalled one.
    public static let coldRetrySeconds = 1.0

    private let lanes: [any HTTPTransport]
    private let state: LockedState<State>
    private let sleep: @Sendable (Double) async throws -> Void
    private let now: @Sendable () -> Double

    /// `lanes` lanes, each a `URLSessionTransport` with a URL session of its own, made when the
    /// lane is first used (a client that is created and never sends holds no session).
    public convenience init(lanes: Int = 4, policy: HedgePolicy = HedgePolicy()) {
        var policy = policy
        policy.lanes = max(1, lanes)
        self.init(lanes: (0..<policy.lanes).map { _ in LazySessionLane() }, policy: policy)
    }

    /// Hedges over the given transports (each should hold connections of its own). `sleep`
    /// and `now` (monotonic seconds) are injected for tests.
    public init(
        lanes: [any HTTPTransport], policy: HedgePolicy = HedgePolicy(),
        sleep: @escaping @Sendable (Double) async throws -> Void = {
            try await Task.sleep(nanoseconds: UInt64(max(0, $0) * 1e9))
        },
        now: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }
    ) {
        precondition(!lanes.isEmpty, "HedgingTransport needs at least one lane")
        var policy = policy
        policy.lanes = lanes.count
        self.lanes = lanes
        self.sleep = sleep
        self.now = now
        state = LockedState(
            State(
                policy: policy, inFlight: Array(repeating: 0, count: lanes.count),
                lastAnswer: Array(repeating: nil, count: lanes.count)))
    }

    /// Invalidates every lane.
    public func invalidate() { lanes.forEach { $0.invalidate() } }

    /// How many lanes answered within ``keepWarmSeconds`` (their connections are likely open).
    public var warmLaneCount: Int { warmLanes() }

    /// The policy as measured so far (its round-trip estimate).
    public var policy: HedgePolicy { state.withLock { $0.policy } }

    public func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await send(request, repeatable: false)
    }

    public func send(_ request: URLRequest, repeatable: Bool) async throws -> (Data, HTTPURLResponse) {
        keepWarm(for: request)
        guard repeatable, lanes.count > 1 else {
            let lane = acquire(excluding: [])
            let started = now(), opened = hasAnswered(lane)
            do {
                let answer = try await lanes[lane].send(request)
                release(lane, answered: true, started: started)
                if opened { measured(now() - started) }
                return answer
            } catch {
                release(lane, answered: false, started: started)
                throw error
            }
        }
        return try await hedged(request).get()
    }

    /// A held request (a long poll, the caller's media token held until the answer) as
    /// `copies` copies at once on the least busy lanes (at most one each): the server answers
    /// them all at the same moment, and the first answer to arrive wins. The others are not
    /// cancelled — that would close their connections (HTTP/1.1), and the requests after the
    /// answer would pay for new handshakes — but end by themselves a moment later. Cancelling
    /// the caller's task cancels them all.
    public func sendHeld(_ request: URLRequest, copies: Int) async throws -> (Data, HTTPURLResponse) {
        keepWarm(for: request)
        // Copies go on idle lanes only, so a loser still out on a stalled connection is not
        // joined by more: one copy when no lane is idle.
        let idle = state.withLock { state in state.inFlight.filter { $0 == 0 }.count }
        let count = min(max(1, copies), max(1, idle))
        let race = HedgeRace(lanes: count, cancelsLosers: false)
        return try await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Answer, Never>) in
                race.begin(continuation)
                for _ in 0..<count { launch(request, in: race, hedgeTimer: false, measures: false) }
            }
        } onCancel: {
            race.finish(.failure(CancellationError()), cancellingCopies: true)
        }.get()
    }

    /// Opens a connection on every idle lane ahead of need (a `GET` of `url`, its answer
    /// ignored): a woken app calls this the moment a push arrives, so the handshakes race
    /// while the phone rings.
    public func warm(_ url: URL) {
        let lanes = state.withLock { state -> [Int] in
            if state.warmURL == nil { state.warmURL = url }
            let idle = state.inFlight.indices.filter { state.inFlight[$0] == 0 && !state.warming.contains($0) }
            state.warming.formUnion(idle)
            return idle
        }
        for lane in lanes { warm(lane: lane, url: url) }
    }

    /// Warms the lanes that have been idle longer than ``keepWarmSeconds`` (or never answered)
    /// beside `request`, on its server's `/healthz`.
    private func keepWarm(for request: URLRequest) {
        guard lanes.count > 1 else { return }
        let moment = now()
        let (cold, url) = state.withLock { state -> ([Int], URL?) in
            if state.warmURL == nil, let url = request.url,
                var parts = URLComponents(url: url, resolvingAgainstBaseURL: false)
            {
                parts.path = "/healthz"
                parts.query = nil
                state.warmURL = parts.url
            }
            guard let url = state.warmURL else { return ([], nil) }
            let cold = state.inFlight.indices.filter { lane in
                state.inFlight[lane] == 0 && !state.warming.contains(lane)
                    && (state.lastAnswer[lane].map { moment - $0 > Self.keepWarmSeconds } ?? true)
            }
            // The request itself warms one of them, unless a warm idle lane takes it (``acquire``
            // prefers the lane that answered last).
            let warmIdle = state.inFlight.indices.contains { lane in
                state.inFlight[lane] == 0
                    && (state.lastAnswer[lane].map { moment - $0 <= Self.keepWarmSeconds } ?? false)
            }
            let others = warmIdle ? cold : Array(cold.dropFirst())
            state.warming.formUnion(others)
            return (others, url)
        }
        guard let url else { return }
        for lane in cold { warm(lane: lane, url: url) }
    }

    /// Whether `lane` ever answered (so it has held a connection).
    private func hasAnswered(_ lane: Int) -> Bool { state.withLock { $0.lastAnswer[lane] != nil } }

    /// Lanes that answered within ``keepWarmSeconds``: their connection is likely open.
    private func warmLanes() -> Int {
        let moment = now()
        return state.withLock { state in
            state.lastAnswer.filter { $0.map { moment - $0 <= Self.keepWarmSeconds } ?? false }.count
        }
    }

    private func warm(lane: Int, url: URL) {
        let transport = lanes[lane]
        Task { [self] in
            let started = now(), opened = hasAnswered(lane)
            let answered = (try? await transport.send(URLRequest(url: url, timeoutInterval: 10))) != nil
            let moment = now()
            state.withLock { state in
                state.warming.remove(lane)
                Self.note(lane, answered: answered, at: moment, sentAt: started, in: &state)
                if answered, opened { state.policy.answered(after: moment - started) }
            }
        }
    }

    // MARK: Hedging

    typealias Answer = Result<(Data, HTTPURLResponse), any Error>

    /// Sends copies until one decides; the copies that lose are cancelled and not waited for
    /// (a transport slow to notice a cancellation never holds the answer back).
    private func hedged(_ request: URLRequest) async -> Answer {
        let cold = warmLanes() == 0
        let race = HedgeRace(lanes: lanes.count, copies: cold ? 2 * lanes.count : lanes.count)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Answer, Never>) in
                race.begin(continuation)
                // With no lane known to hold an open connection (a woken app, or one idle for
                // long), every lane gets a copy at once: their handshakes race, and one lost
                // SYN (a whole second) no longer decides. Unanswered after
                // `coldRetrySeconds`, every lane gets one more, on a second connection (its
                // first one is still busy).
                if cold {
                    for _ in lanes.indices { launch(request, in: race, hedgeTimer: false) }
                    let timer = Task { [self, sleep] in
                        guard (try? await sleep(Self.coldRetrySeconds)) != nil else { return }
                        for _ in lanes.indices where race.isRunning { launch(request, in: race, hedgeTimer: false) }
                    }
                    race.track(timer)
                } else {
                    launch(request, in: race)
                }
            }
        } onCancel: {
            race.finish(.failure(CancellationError()), cancellingCopies: true)
        }
    }

    /// `measures`: whether the copy's time is a round trip (not for held requests).
    private func launch(_ request: URLRequest, in race: HedgeRace, hedgeTimer: Bool = true, measures: Bool = true) {
        guard let (copy, timerGeneration) = race.reserveCopy(acquire: { acquire(excluding: $0) }) else { return }
        // Only a lane that answered before has an open connection: the time of a lane's first
        // answer includes its handshake, which says nothing about the round trip.
        let transport = lanes[copy.lane], started = now(), opened = measures && hasAnswered(copy.lane)
        let task = Task { [self] in
            let answer: Answer
            do {
                answer = .success(try await transport.send(request))
            } catch {
                answer = .failure(error)
            }
            let outcome = Self.outcome(of: answer)
            release(copy.lane, answered: outcome != .transportFailure, started: started)
            if opened, outcome != .transportFailure, !Task.isCancelled { measured(now() - started) }
            if race.answered(answer, outcome: outcome) == .sendCopy { launch(request, in: race) }
        }
        race.track(task)
        guard hedgeTimer, let timerGeneration else { return }
        let delay = state.withLock { $0.policy.hedgeDelay }
        let timer = Task { [self, sleep] in
            guard (try? await sleep(delay)) != nil else { return }
            if race.hedgeDue(timerGeneration) { launch(request, in: race) }
        }
        race.track(timer)
    }

    private static func outcome(of result: Result<(Data, HTTPURLResponse), any Error>) -> HedgePolicy.Outcome {
        switch result {
        case .success(let (_, response)):
            if (200..<300).contains(response.statusCode) { return .success }
            return response.statusCode == 409 ? .conflict : .refused
        case .failure: return .transportFailure
        }
    }

    // MARK: Lanes

    /// The least busy lane not in `excluded` (any lane once every one is), counted busy. On a
    /// tie, the one that answered last (its connection is the likeliest to be open), then the
    /// lowest index.
    private func acquire(excluding excluded: [Int]) -> Int {
        state.withLock { state in
            let unused = state.inFlight.indices.filter { !excluded.contains($0) }
            let candidates = unused.isEmpty ? Array(state.inFlight.indices) : unused
            let lane =
                candidates.min { a, b in
                    if state.inFlight[a] != state.inFlight[b] { return state.inFlight[a] < state.inFlight[b] }
                    let answeredA = state.lastAnswer[a] ?? -.infinity, answeredB = state.lastAnswer[b] ?? -.infinity
                    return answeredA != answeredB ? answeredA > answeredB : a < b
                } ?? 0
            state.inFlight[lane] += 1
            return lane
        }
    }

    /// A copy on `lane`, sent at `started`, ended. One that did not answer (it failed, or lost
    /// the race and was cancelled, which closes an HTTP/1.1 connection mid-request) leaves the
    /// lane cold, unless another copy on it answered since it was sent (that connection is open).
    private func release(_ lane: Int, answered: Bool, started: Double) {
        let moment = now()
        state.withLock { state in
            state.inFlight[lane] -= 1
            Self.note(lane, answered: answered, at: moment, sentAt: started, in: &state)
        }
    }

    private static func note(
        _ lane: Int, answered: Bool, at moment: Double, sentAt started: Double, in state: inout State
    ) {
        if answered {
            state.lastAnswer[lane] = moment
        } else if let last = state.lastAnswer[lane], last < started {
            state.lastAnswer[lane] = nil
        }
    }

    private func measured(_ seconds: Double) {
        state.withLock { $0.policy.answered(after: seconds) }
    }
}

/// One hedged request: which lanes it used, what came back, and the one answer it gives.
final class HedgeRace: Sendable {
    struct Copy { let lane: Int }

    private struct State {
        var continuation: CheckedContinuation<HedgingTransport.Answer, Never>?
        var finished = false
        var used: [Int] = []
        var inFlight = 0
        var generation = 0
        var kept: [(HedgePolicy.Outcome, HedgingTransport.Answer)] = []
        var tasks: [Task<Void, Never>] = []
        /// A finish cancelled the copies: any tracked later are cancelled too.
        var cancelled = false
    }

    private let lanes: Int
    /// At most this many copies in all (a cold start's second round goes past `lanes`).
    private let copies: Int
    private let state = LockedState(State())

    /// Whether the copies still out are cancelled once an answer decided (not for held
    /// requests, whose copies end by themselves).
    private let cancelsLosers: Bool

    init(lanes: Int, copies: Int? = nil, cancelsLosers: Bool = true) {
        self.lanes = lanes
        self.copies = max(lanes, copies ?? lanes)
        self.cancelsLosers = cancelsLosers
    }

    /// Whether no answer decided yet.
    var isRunning: Bool { state.withLock { !$0.finished } }

    func begin(_ continuation: CheckedContinuation<HedgingTransport.Answer, Never>) {
        let early = state.withLock { state -> Bool in
            if state.finished { return true }
            state.continuation = continuation
            return false
        }
        // Cancelled before it began.
        if early { continuation.resume(returning: .failure(CancellationError())) }
    }

    /// A lane for the next copy (nil when finished or out of lanes), and the generation of
    /// its hedge timer (nil when no lane would be left for a copy after it).
    func reserveCopy(acquire: ([Int]) -> Int) -> (Copy, Int?)? {
        state.withLock { state in
            guard !state.finished, state.used.count < copies else { return nil }
            let lane = acquire(state.used)
            state.used.append(lane)
            state.inFlight += 1
            state.generation += 1
            return (Copy(lane: lane), state.used.count < lanes ? state.generation : nil)
        }
    }

    func track(_ task: Task<Void, Never>) {
        let cancel = state.withLock { state -> Bool in
            if state.finished, cancelsLosers || state.cancelled { return true }
            state.tasks.append(task)
            return false
        }
        if cancel { task.cancel() }
    }

    /// The hedge timer of `generation` fired: true when a copy should go out now (no newer
    /// copy went out meanwhile and the race is still on).
    func hedgeDue(_ generation: Int) -> Bool {
        state.withLock { !$0.finished && $0.generation == generation && $0.used.count < lanes }
    }

    /// A copy came back: finishes the race, waits for another copy, or asks for one now.
    func answered(_ answer: HedgingTransport.Answer, outcome: HedgePolicy.Outcome) -> HedgePolicy.Step {
        let (step, chosen) = state.withLock { state -> (HedgePolicy.Step, HedgingTransport.Answer?) in
            guard !state.finished else { return (.wait, nil) }
            state.inFlight -= 1
            // A success, or the server's final word: this answer, whatever else is out.
            if outcome == .success || outcome == .refused { return (.finish, answer) }
            state.kept.append((outcome, answer))
            let step = HedgePolicy.step(
                after: outcome, inFlight: state.inFlight, unusedLanes: copies - state.used.count)
            guard step == .finish else { return (step, nil) }
            let index = HedgePolicy.preferred(state.kept.map(\.0)) ?? (state.kept.count - 1)
            return (.finish, state.kept[index].1)
        }
        if let chosen { finish(chosen) }
        return step
    }

    /// Gives `answer` (the first call wins) and cancels every copy and timer still running
    /// (unless the race leaves its losers be and `cancellingCopies` is not set).
    func finish(_ answer: HedgingTransport.Answer, cancellingCopies: Bool? = nil) {
        let cancelling = cancellingCopies ?? cancelsLosers
        let (continuation, tasks) = state.withLock {
            state -> (CheckedContinuation<HedgingTransport.Answer, Never>?, [Task<Void, Never>]) in
            let continuation = state.finished ? nil : state.continuation
            state.finished = true
            if cancelling { state.cancelled = true }
            state.continuation = nil
            // Copies left be stay listed, so cancelling the caller's task still reaches them.
            guard cancelling else { return (continuation, []) }
            defer { state.tasks = [] }
            return (continuation, state.tasks)
        }
        tasks.forEach { $0.cancel() }
        continuation?.resume(returning: answer)
    }
}

/// A `URLSessionTransport` made on first use.
final class LazySessionLane: HTTPTransport {
    private let made = LockedState<URLSessionTransport?>(nil)

    private var transport: URLSessionTransport {
        made.withLock { made in
            if let made { return made }
            let transport = URLSessionTransport(session: URLSession(configuration: .ephemeral))
            made = transport
            return transport
        }
    }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await transport.send(request)
    }

    func invalidate() { made.withLock { $0 }?.invalidate() }
}
