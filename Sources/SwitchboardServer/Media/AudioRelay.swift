import Foundation
import Synchronization
import SwitchboardCore
import SwitchboardHTTP
import SwitchboardObservability

/// The built-in audio relay (SPEC §10), the media backend of `mediaBackend: relay`: each call's
/// room is the set of its participants' audio WebSockets (`GET /calls/{id}/audio`).
///
/// - Two in a room: each frame is forwarded to the other as it arrives, on the sender's event
///   loop, with no task and no timer between them.
/// - Three or more: frames wait in a short queue per participant (at most 3, 60 ms); every
///   20 ms the mixer sends each participant the saturated sum of everyone else's (N−1).
/// - A receiver that cannot keep up (more than `slowReceiverBytes` unsent, with the kernel's
///   send buffer kept small) loses frames, counted, instead of building a queue.
/// - Leaving, removal and the end of the call close the sockets with a reason (4000, 4001), as
///   room actions of the call's transitions, so the relay is a `MediaBackend` like LiveKit.
final class AudioRelay: MediaBackend, Sendable {
    /// Close codes of the relay's own (RFC 6455 leaves 4000–4999 to applications).
    enum CloseCode {
        /// The participant left the call or was removed from it.
        static let left: UInt16 = 4000
        /// The call ended.
        static let callEnded: UInt16 = 4001
        /// The same user connected again; the older socket goes.
        static let replaced: UInt16 = 4002
        /// The socket kept sending frames far faster than real time (``Settings/maxFramesPerSecond``).
        static let flooding: UInt16 = 4008
    }

    struct Settings: Sendable {
        /// Unsent bytes above which a frame for that receiver is dropped: 16 frames, 320 ms
        /// (a burst after a stall on the sender's side passes; a receiver that stopped reading
        /// loses what it cannot play in time anyway).
        var slowReceiverBytes = 16 * (RelayAudioFormat.bytesPerFrame + 4)
        /// The kernel send buffer asked for each socket (Linux doubles it: about 0.4 s of audio).
        var sendBufferBytes = 4096
        /// Frames a participant may have waiting for the mixer.
        var mixQueueFrames = 3
        /// How long a removal or a room's end is remembered, to refuse sockets with older tokens
        /// (longer than a media token lives).
        var memorySeconds: TimeInterval = 600
        /// Frames one socket may send per second, about twice real time; more are dropped and
        /// counted. Dropped frames past five seconds' worth of the limit within five seconds
        /// close the socket (``CloseCode/flooding``).
        var maxFramesPerSecond = 100

        /// The per-socket frame limit, in the one limiter's terms.
        var frameLimit: RateLimit { RateLimit(count: maxFramesPerSecond, windowMS: 1000) }
        /// How many refused frames a socket may send before it is closed.
        var floodLimit: RateLimit { RateLimit(count: 5 * maxFramesPerSecond, windowMS: 5000) }
    }

    /// One participant's socket.
    final class Participant: Sendable {
        let userID: String
        let room: String
        let socket: WebSocket
        let queue: Mutex<RelayFrameQueue>
        /// Frames received, sent (forwarded or mixed) and dropped for this receiver being slow.
        let received = Atomic<UInt64>(0)
        let sent = Atomic<UInt64>(0)
        let droppedSlow = Atomic<UInt64>(0)
        /// Frames dropped for coming faster than the socket's limit.
        let droppedFlood = Atomic<UInt64>(0)
        /// The socket's frames and its refused frames, counted by the one limiter (in memory:
        /// a socket lives on one instance).
        let rate = Mutex((frames: RateCounter(), refused: RateCounter()))

        init(userID: String, room: String, socket: WebSocket, queueFrames: Int) {
            self.userID = userID
            self.room = room
            self.socket = socket
            self.queue = Mutex(RelayFrameQueue(capacity: queueFrames))
        }
    }

    private struct State: Sendable {
        /// Room → its participants (an array replaced on change, so a frame reads it cheaply).
        var rooms: [String: [Participant]] = [:]
        /// Room → user → how many times they were removed from it: a socket admitted before a
        /// removal (its ticket holds the older count) is refused when it opens after it.
        var removals: [String: [String: UInt64]] = [:]
        /// Rooms whose call ended, and when.
        var ended: [String: Date] = [:]
        /// Room → its call's id, for rooms with sockets (to check the call in the store).
        var calls: [String: String] = [:]
    }

    let settings: Settings
    private let state = Mutex(State())
    private let metrics: Metrics
    private let logger: Logger
    private let now: @Sendable () -> Date
    /// Frames sent for the mixer, and dropped because a participant's queue was full.
    private let mixerDroppedLate = Atomic<UInt64>(0)

    /// With instances sharing a database: the sockets other instances reported in a room.
    let otherInstances: (@Sendable (String) async throws -> Int)?

    init(
        settings: Settings = Settings(), metrics: Metrics, logger: Logger, now: @escaping @Sendable () -> Date,
        otherInstances: (@Sendable (String) async throws -> Int)? = nil
    ) {
        self.otherInstances = otherInstances
        self.settings = settings
        self.metrics = metrics
        self.logger = logger
        self.now = now
        metrics.addGauge(
            "switchboard_relay_sockets", help: "Audio relay WebSockets in a call's room now (open, not closing)."
        ) { [weak self] in
            Double(self?.socketCount ?? 0)
        }
    }

    /// The audio sockets in the rooms now (a socket leaves its room when it is told to close).
    var socketCount: Int { state.withLock { $0.rooms.values.reduce(0) { $0 + $1.count } } }

    // MARK: MediaBackend

    var managesRooms: Bool { true }

    /// Room actions never fail here, and the relay's own records of them (an ended room, a
    /// removal) must not run ahead of a commit that may not happen: they follow the commit.
    var appliesAfterCommit: Bool { true }

    func perform(_ actions: [MediaAction]) async throws {
        for action in actions {
            switch action {
            case .deleteRoom(let room):
                let gone = state.withLock { state in
                    state.ended[room] = now()
                    state.removals[room] = nil
                    state.calls[room] = nil
                    return state.rooms.removeValue(forKey: room) ?? []
                }
                for participant in gone {
                    participant.socket.close(code: CloseCode.callEnded, reason: "the call ended")
                }
            case .removeParticipant(let room, let identity):
                let gone = state.withLock { state in
                    state.removals[room, default: [:]][identity, default: 0] += 1
                    let leaving = state.rooms[room]?.filter { $0.userID == identity } ?? []
                    state.rooms[room]?.removeAll { $0.userID == identity }
                    return leaving
                }
                for participant in gone { participant.socket.close(code: CloseCode.left, reason: "you left the call") }
            }
        }
        forget(before: now().addingTimeInterval(-settings.memorySeconds))
    }

    func participantCount(room: String) async throws -> Int {
        let here = state.withLock { $0.rooms[room]?.count ?? 0 }
        guard let others = otherInstances else { return here }
        return try await here + others(room)
    }

    /// Ended rooms are remembered long enough to outlive every token minted for them (and
    /// every call's `active` state, which the route checks first); removal counts go with the
    /// room's end.
    private func forget(before moment: Date) {
        state.withLock { state in state.ended = state.ended.filter { $0.value >= moment } }
    }

    // MARK: Sockets

    /// What a socket was admitted with, taken before the route reads the stored call: the
    /// user's removal count then. A removal runs after its commit, so a socket whose route read
    /// the call before a removal committed sees the count move (and is refused when it opens),
    /// or is in the room already when the removal runs (and is closed by it).
    struct Ticket: Sendable {
        let room: String
        let callID: String
        let userID: String
        let removals: UInt64
    }

    /// A ticket for `userID` in `room` (the room of `callID`), or nil once the room's call ended.
    func ticket(room: String, callID: String, userID: String) -> Ticket? {
        state.withLock { state in
            if state.ended[room] != nil { return nil }
            return Ticket(room: room, callID: callID, userID: userID, removals: state.removals[room]?[userID] ?? 0)
        }
    }

    // MARK: Across instances

    /// The rooms with sockets here: each one's call and the users whose sockets are in it.
    func hostedRooms() -> [String: (callID: String, users: [String])] {
        state.withLock { state in
            var hosted: [String: (callID: String, users: [String])] = [:]
            for (room, members) in state.rooms where !members.isEmpty {
                guard let callID = state.calls[room] else { continue }
                hosted[room] = (callID, members.map(\.userID))
            }
            return hosted
        }
    }

    /// What the store says of the calls of rooms hosted here, when another instance changed
    /// them (its room actions ran there): a room whose call is no longer active ends, and a
    /// user no longer present in it is removed, as the room actions would have done here.
    /// `calls` holds, per room looked up, the users hosted before the read (a socket that
    /// joined after it is left alone) and the call as read (nil: gone or not active).
    func reconcile(_ calls: [String: (users: [String], present: Set<String>?)]) async {
        var actions: [MediaAction] = []
        for (room, call) in calls {
            guard let present = call.present else {
                actions.append(.deleteRoom(room))
                continue
            }
            for user in Set(call.users) where !present.contains(user) {
                actions.append(.removeParticipant(room: room, identity: user))
            }
        }
        if !actions.isEmpty { try? await perform(actions) }
    }

    /// The handlers of a new participant's socket.
    func handlers(_ ticket: Ticket) -> WebSocket.Handlers {
        // The participant holds its socket, and the socket these handlers: `onClose` lets go of
        // the participant, so the pair is freed once the connection is over.
        let holder = Mutex<Participant?>(nil)
        return WebSocket.Handlers(
            onOpen: { [self] socket in
                let participant = Participant(
                    userID: ticket.userID, room: ticket.room, socket: socket, queueFrames: settings.mixQueueFrames)
                socket.limitSendBuffer(to: settings.sendBufferBytes)
                guard join(participant, ticket: ticket) else {
                    socket.close(code: CloseCode.left, reason: "not in the call any more")
                    return
                }
                holder.withLock { $0 = participant }
            },
            onMessage: { [self] socket, message in
                guard let participant = holder.withLock({ $0 }) else { return }
                switch message {
                case .binary(let bytes) where bytes.count == RelayAudioFormat.bytesPerFrame:
                    switch admit(participant) {
                    case .allowed: received(bytes, from: participant)
                    case .refused: participant.droppedFlood.wrappingAdd(1, ordering: .relaxed)
                    case .flooding:
                        socket.close(code: CloseCode.flooding, reason: "audio frames far faster than real time")
                    }
                case .binary(let bytes):
                    socket.close(
                        code: WebSocketCloseCode.invalidPayload,
                        reason: "a frame is 320 bytes (20 ms of 8 kHz s16le), not \(bytes.count)")
                case .text:
                    socket.close(code: WebSocketCloseCode.unsupportedData, reason: "audio frames are binary messages")
                }
            },
            onClose: { [self] _, info in
                guard
                    let participant = holder.withLock({ held in
                        defer { held = nil }
                        return held
                    })
                else { return }
                left(participant, info: info)
            })
    }

    private func join(_ participant: Participant, ticket: Ticket) -> Bool {
        let replaced: [Participant]? = state.withLock { state in
            // Checked again now that the socket is open: the call may have moved on meanwhile.
            if state.ended[ticket.room] != nil { return nil }
            if (state.removals[ticket.room]?[ticket.userID] ?? 0) != ticket.removals { return nil }
            state.calls[participant.room] = ticket.callID
            var members = state.rooms[participant.room] ?? []
            let older = members.filter { $0.userID == participant.userID }
            members.removeAll { $0.userID == participant.userID }
            members.append(participant)
            state.rooms[participant.room] = members
            return older
        }
        guard let replaced else { return false }
        for older in replaced { older.socket.close(code: CloseCode.replaced, reason: "connected again elsewhere") }
        return true
    }

    private func left(_ participant: Participant, info: WebSocketCloseInfo) {
        // Still in the room when the peer went (a removal or the call's end took it out already).
        state.withLock { state in
            guard let members = state.rooms[participant.room], members.contains(where: { $0 === participant }) else {
                return
            }
            let rest = members.filter { $0 !== participant }
            state.rooms[participant.room] = rest.isEmpty ? nil : rest
            if rest.isEmpty { state.calls[participant.room] = nil }
        }
        let help = "Audio relay frames by outcome."
        metrics.add(
            participant.received.load(ordering: .relaxed), to: "switchboard_relay_frames_total", help: help,
            labels: [("outcome", "received")])
        metrics.add(
            participant.sent.load(ordering: .relaxed), to: "switchboard_relay_frames_total", help: help,
            labels: [("outcome", "sent")])
        metrics.add(
            participant.droppedSlow.load(ordering: .relaxed), to: "switchboard_relay_frames_total", help: help,
            labels: [("outcome", "dropped_slow_receiver")])
        let late = UInt64(participant.queue.withLock { $0.droppedLate })
        metrics.add(late, to: "switchboard_relay_frames_total", help: help, labels: [("outcome", "dropped_late")])
        metrics.add(
            participant.droppedFlood.load(ordering: .relaxed), to: "switchboard_relay_frames_total", help: help,
            labels: [("outcome", "dropped_rate_limit")])
        logger.info(
            "audio socket closed",
            [
                "room": .string(participant.room), "user.id": .string(participant.userID), "code": .int(Int(info.code)),
                "frames.received": .int(Int(participant.received.load(ordering: .relaxed))),
                "frames.sent": .int(Int(participant.sent.load(ordering: .relaxed))),
                "frames.dropped": .int(Int(participant.droppedSlow.load(ordering: .relaxed)) + Int(late)),
                "frames.dropped_rate_limit": .int(Int(participant.droppedFlood.load(ordering: .relaxed))),
            ])
    }

    enum Admission { case allowed, refused, flooding }

    /// Whether a frame `participant` sent may pass its socket's limit now.
    private func admit(_ participant: Participant) -> Admission {
        let nowMS = Int64((now().timeIntervalSince1970 * 1000).rounded(.down))
        let frameLimit = settings.frameLimit, floodLimit = settings.floodLimit
        return participant.rate.withLock { rate in
            let (decision, frames) = RateLimiter.take(1, of: frameLimit, from: rate.frames, nowMS: nowMS)
            rate.frames = frames
            guard !decision.isAllowed else { return .allowed }
            let (kept, refused) = RateLimiter.take(1, of: floodLimit, from: rate.refused, nowMS: nowMS)
            rate.refused = refused
            return kept.isAllowed ? .refused : .flooding
        }
    }

    /// A frame from `participant`: forwarded at once when one other is in the room, queued for
    /// the mixer when more are.
    private func received(_ bytes: [UInt8], from participant: Participant) {
        participant.received.wrappingAdd(1, ordering: .relaxed)
        let members = state.withLock { $0.rooms[participant.room] ?? [] }
        guard members.contains(where: { $0 === participant }) else { return }
        if members.count <= 2 {
            for other in members where other !== participant { send(bytes, to: other) }
        } else {
            let samples = RelayAudioFormat.samples(bytes)
            participant.queue.withLock { $0.push(samples) }
        }
    }

    private func send(_ bytes: [UInt8], to receiver: Participant) {
        switch receiver.socket.send(.binary(bytes), droppingIfUnsentAbove: settings.slowReceiverBytes) {
        case .queued: receiver.sent.wrappingAdd(1, ordering: .relaxed)
        case .dropped: receiver.droppedSlow.wrappingAdd(1, ordering: .relaxed)
        case .closed: break
        }
    }

    // MARK: The mixer

    /// One mixer tick: every room of three or more gets its N−1 mixes.
    func mixTick() {
        let mixing = state.withLock { state in state.rooms.values.filter { $0.count >= 3 } }
        for members in mixing {
            let frames = members.map { member in member.queue.withLock { $0.pop() } }
            // Nobody spoke (nothing arrived this tick): nothing to send.
            guard frames.contains(where: { $0 != nil }) else { continue }
            let mixes = AudioMixer.mixMinusOne(frames)
            for (member, mix) in zip(members, mixes) {
                if let mix { send(RelayAudioFormat.bytes(mix), to: member) }
            }
        }
    }

    /// Runs the mixer every 20 ms on `environment`'s clock (the manual clock in tests) until
    /// cancelled. Ticks keep a steady schedule; one that comes late is not made up for with a
    /// burst (the queues are short), and a clock that jumps (either way) restarts the schedule
    /// from now.
    func runMixer(environment: ServerEnvironment) async {
        let period = TimeInterval(RelayAudioFormat.frameMilliseconds) / 1000
        var next = environment.now()
        while !Task.isCancelled {
            next = next.addingTimeInterval(period)
            let current = environment.now()
            if next <= current || next > current.addingTimeInterval(2 * period) {
                next = current.addingTimeInterval(period)
            }
            do { try await environment.sleepUntil(next) } catch { return }
            mixTick()
        }
    }
}
