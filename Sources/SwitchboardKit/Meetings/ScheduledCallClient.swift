import Foundation

/// Scheduled group calls (meetings) as thin API methods: list the upcoming ones, schedule and
/// cancel a group's, and ask for the pre-authorisation that lets a join skip the media-token
/// round trip. To keep pre-authorisations ready for the next meetings use ``MeetingPreloader``.
///
/// ```swift
/// let meetings = ScheduledCallClient(client: client)
/// let standup = try await meetings.schedule(ScheduleCall(startsAt: "2026-12-04T09:00:00Z", mode: .audio, title: "Stand-up"), inGroup: groupID)
/// let upcoming = try await meetings.upcoming(limit: 10)
/// ```
public struct ScheduledCallClient: Sendable {
    let client: SwitchboardClient

    /// How many scheduled calls one list may ask for.
    public static let limits: ClosedRange<Int> = 1...50

    /// Sends through `client` (its base URL and token).
    public init(client: SwitchboardClient) { self.client = client }

    /// `GET /scheduled-calls`: the scheduled calls of the user's groups that are not cancelled
    /// and did not start more than an hour ago, ascending by start time. `limit` is clamped to
    /// ``limits``; nil: the server's default (20).
    public func upcoming(limit: Int? = nil) async throws -> [ScheduledCall] {
        let query =
            limit.map { [("limit", String(min(max($0, Self.limits.lowerBound), Self.limits.upperBound)))] } ?? []
        let list: ScheduledCallList = try await client.call("GET", "/scheduled-calls", query: query)
        return list.scheduledCalls
    }

    /// `GET /groups/{id}/scheduled-calls`: the same, for one group.
    public func scheduledCalls(inGroup groupID: String) async throws -> [ScheduledCall] {
        let list: ScheduledCallList = try await client.call(
            "GET", "/groups/\(QueryEncoding.encode(groupID))/scheduled-calls")
        return list.scheduledCalls
    }

    /// `POST /groups/{id}/scheduled-calls`: schedules a call for the group's members. Not
    /// repeatable (a copy would schedule a second one).
    public func schedule(_ call: ScheduleCall, inGroup groupID: String) async throws -> ScheduledCall {
        try await client.call(
            "POST", "/groups/\(QueryEncoding.encode(groupID))/scheduled-calls", body: call, repeatable: false)
    }

    /// `DELETE /groups/{id}/scheduled-calls/{scheduledCallId}`: cancels it.
    public func cancel(_ scheduledCallID: String, inGroup groupID: String) async throws {
        try await client.send(
            "DELETE",
            "/groups/\(QueryEncoding.encode(groupID))/scheduled-calls/\(QueryEncoding.encode(scheduledCallID))")
    }

    /// `POST /scheduled-calls/{id}/preauthorization`: a single-use pre-authorisation for this
    /// user and this scheduled call, valid ten minutes. 404: unknown or not a member; 409
    /// `SCHEDULED_CALL_ENDED`: cancelled, or its call ended.
    public func preauthorize(_ scheduledCallID: String) async throws -> CallPreauthorization {
        // Repeatable: each copy issues a token of its own, and any one of them is as good.
        try await client.call(
            "POST", "/scheduled-calls/\(QueryEncoding.encode(scheduledCallID))/preauthorization", repeatable: true)
    }

    /// `POST /calls/{id}/join` with a pre-authorisation: the call, and its media token when the
    /// pre-authorisation was still valid for this call (the token is then used up).
    public func join(_ callID: String, preauthorization: String) async throws -> CallWithMedia {
        try await client.join(callID, preauthorization: preauthorization)
    }
}

extension SwitchboardClient {
    /// `POST /calls/{id}/join` with `{"preauthorization": token}`: the call, with `media` when
    /// the server accepted the pre-authorisation; otherwise the join went on as without one.
    public func join(_ callID: String, preauthorization: String) async throws -> CallWithMedia {
        // Repeatable as the plain join is: a repeat answers 409, held back by a hedging
        // transport while the first copy's answer is on its way.
        try await call(
            "POST", "/calls/\(QueryEncoding.encode(callID))/join", body: JoinCall(preauthorization: preauthorization),
            repeatable: true)
    }
}
