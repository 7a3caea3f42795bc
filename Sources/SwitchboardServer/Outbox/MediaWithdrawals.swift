import Foundation
import SwitchboardCore
import SwitchboardStore

/// Media withdrawals as outbox jobs (kind `media`): removing a participant from a room, or
/// deleting a room, written in the transaction of the change that calls for them (a block, a
/// member removed, a group dissolved) and retried with a growing pause (1 s, 2 s, 4 s … at most
/// a minute) until the media backend confirms. The actions are idempotent (LiveKit's 404 for a
/// room that is gone counts as done). The jobs of one call go in order.
struct MediaWithdrawals: OutboxJobHandler {
    let store: ServerStore
    let media: any MediaBackend
    var lease: TimeInterval = 30
    /// A withdrawal is never given up: a user must not stay in a room they were taken out of.
    var giveUpAfter: TimeInterval? { nil }

    /// The job's payload.
    struct Payload: Codable {
        var callId: String
        var action: String
        var room: String
        var identity: String?
    }

    /// The job that carries out `action` for `callID`.
    static func job(_ action: MediaAction, callID: String, id: String) -> NewOutboxJob {
        let payload: Payload
        switch action {
        case .deleteRoom(let room):
            payload = Payload(callId: callID, action: "delete_room", room: room)
        case .removeParticipant(let room, let identity):
            payload = Payload(callId: callID, action: "remove_participant", room: room, identity: identity)
        }
        let json = (try? JSONEncoder().encode(payload)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return NewOutboxJob(id: id, kind: .media, queue: "media:\(callID)", target: payload.room, payload: json)
    }

    static func action(of job: OutboxJob) -> (callID: String, action: MediaAction)? {
        guard let payload = try? JSONDecoder().decode(Payload.self, from: Data(job.payload.utf8)) else { return nil }
        switch payload.action {
        case "delete_room": return (payload.callId, .deleteRoom(payload.room))
        case "remove_participant":
            guard let identity = payload.identity else { return nil }
            return (payload.callId, .removeParticipant(room: payload.room, identity: identity))
        default: return nil
        }
    }

    func retryDelay(afterFailures attempts: Int) -> TimeInterval { Self.retryDelay(afterFailures: attempts) }

    /// 1 s, 2 s, 4 s … at most a minute.
    static func retryDelay(afterFailures attempts: Int) -> TimeInterval {
        min(60, pow(2, Double(max(0, min(attempts, 6)))))
    }

    func attempt(_ job: OutboxJob) async -> OutboxAttemptResult {
        guard let (callID, action) = Self.action(of: job) else {
            return OutboxAttemptResult(outcome: .giveUp, error: "unreadable media job", attempted: false)
        }
        do {
            if try await isStale(action, callID: callID, writtenAtMS: job.createdAtMS) {
                return OutboxAttemptResult(outcome: .done, attempted: false)
            }
            try await media.perform([action])
            return OutboxAttemptResult(outcome: .done)
        } catch {
            return OutboxAttemptResult(outcome: .retry(notBefore: nil), error: String(describing: error))
        }
    }

    /// A removal that came late: the user is back in the call (joined after the job was
    /// written), and taking them out now would undo that.
    private func isStale(_ action: MediaAction, callID: String, writtenAtMS: Int64) async throws -> Bool {
        guard case .removeParticipant(_, let identity) = action else { return false }
        let call = try await store.snapshot { try $0.calls.load(callID)?.call }
        guard let call, call.state == .active else { return false }
        let written = Date(timeIntervalSince1970: TimeInterval(writtenAtMS) / 1000)
        return call.participants.contains { $0.userID == identity && $0.isPresent && $0.joinedAt > written }
    }
}
