import Foundation
import SwitchboardKit

/// A media stack stand-in: joins take `joinDelay` on the clock (or fail), and audio only flows
/// when it is started while the call system's audio session is active — as an audio unit on
/// iOS fails to start outside an active session.
public final class SimulatedMedia: Sendable {
    public struct Behaviour: Sendable {
        public var joinDelay = 0.2
        public var joinFails = false
        public init() {}
    }

    private struct State {
        var behaviour: Behaviour
        var sessions: [String: SimulatedMediaSession] = [:]
        var callSystem: SimulatedCallSystem?
    }

    private let state: LockedState<State>
    let clock: any CallClock

    public init(clock: any CallClock, behaviour: Behaviour = Behaviour()) {
        self.clock = clock
        state = LockedState(State(behaviour: behaviour))
    }

    /// The call system whose audio session decides whether audio can flow.
    public func attach(_ callSystem: SimulatedCallSystem) { state.withLock { $0.callSystem = callSystem } }

    public func configure(_ change: (inout Behaviour) -> Void) { state.withLock { change(&$0.behaviour) } }

    /// The newest session for a call.
    public func session(_ callID: String) -> SimulatedMediaSession? { state.withLock { $0.sessions[callID] } }

    /// The factory to give the coordinator.
    public func makeSession(_ callID: String) -> any MediaSession {
        state.withLock { state in
            let session = SimulatedMediaSession(
                callID: callID, behaviour: state.behaviour, clock: clock, callSystem: state.callSystem)
            state.sessions[callID] = session
            return session
        }
    }
}

/// One call's simulated media connection.
public final class SimulatedMediaSession: MediaSession {
    public struct Status: Sendable, Equatable {
        public var joined = false
        public var left = false
        /// Audio is running with an active session.
        public var audioFlowing = false
        /// Times audio was started without an active session (silence on a real phone).
        public var audioStartsWithoutSession = 0
        public var muted = false
        /// The memory-pressure levels it was told to shed for, in order.
        public var shedLevels: [MemoryPressureLevel] = []
        /// The media token it joined with.
        public var token: String?
    }

    public struct JoinFailed: Error {}

    public let callID: String
    let behaviour: SimulatedMedia.Behaviour
    let clock: any CallClock
    let callSystem: SimulatedCallSystem?
    private let state = LockedState(Status())

    init(callID: String, behaviour: SimulatedMedia.Behaviour, clock: any CallClock, callSystem: SimulatedCallSystem?) {
        self.callID = callID
        self.behaviour = behaviour
        self.clock = clock
        self.callSystem = callSystem
    }

    public var status: Status { state.withLock { $0 } }

    public func join(url: String, token: String) async throws {
        if behaviour.joinDelay > 0 { try await clock.sleep(for: .seconds(behaviour.joinDelay)) }
        if behaviour.joinFails || token.isEmpty { throw JoinFailed() }
        state.withLock { status in
            status.joined = true
            status.token = token
        }
    }

    public func startAudio() {
        let active = callSystem?.audioSessionActive ?? false
        state.withLock { status in
            if active && status.joined && !status.left {
                status.audioFlowing = true
            } else {
                status.audioStartsWithoutSession += 1
            }
        }
    }

    public func stopAudio() { state.withLock { $0.audioFlowing = false } }
    public func setMuted(_ muted: Bool) { state.withLock { $0.muted = muted } }
    public func shed(_ plan: MemoryShedPlan) { state.withLock { $0.shedLevels.append(plan.level) } }

    public func leave() {
        state.withLock {
            $0.left = true
            $0.audioFlowing = false
        }
    }
}
