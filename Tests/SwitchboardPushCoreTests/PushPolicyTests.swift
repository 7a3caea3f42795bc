import Foundation
import Testing
import SwitchboardWire
@testable import SwitchboardPushCore

@Suite("APNs status and reason → action, case by case", .timeLimit(.minutes(3)))
struct APNsResponsePolicyTests {
    /// Every documented (status, reason) APNs can answer, and what the dispatcher must do.
    static let table: [(Int, String, PushAction)] = [
        (400, "BadCollapseId", .fail), (400, "BadDeviceToken", .reclassifyToken), (400, "BadExpirationDate", .fail),
        (400, "BadMessageId", .fail), (400, "BadPriority", .fail), (400, "BadTopic", .fail),
        (400, "DeviceTokenNotForTopic", .reclassifyToken), (400, "DuplicateHeaders", .fail),
        (400, "IdleTimeout", .retry),
        (400, "InvalidPushType", .fail), (400, "MissingDeviceToken", .fail), (400, "MissingTopic", .fail),
        (400, "PayloadEmpty", .fail), (400, "TopicDisallowed", .fail),
        (400, "BadPayload", .fail),  // the emulator's own reason for a body that is not JSON
        (403, "BadCertificate", .fail), (403, "BadCertificateEnvironment", .fail),
        (403, "ExpiredProviderToken", .refreshProviderTokenAndRetry), (403, "Forbidden", .fail),
        (403, "InvalidProviderToken", .fail), (403, "MissingProviderToken", .fail),
        (403, "UnrelatedKeyIdInToken", .fail),
        (403, "BadEnvironmentKeyIdInToken", .fail), (403, "BadEnvironmentKeyInToken", .fail),
        (404, "BadPath", .fail), (405, "MethodNotAllowed", .fail),
        (410, "ExpiredToken", .deleteToken), (410, "Unregistered", .deleteToken),
        (413, "PayloadTooLarge", .fail),
        (429, "TooManyProviderTokenUpdates", .retry), (429, "TooManyRequests", .retry),
        (500, "InternalServerError", .retry), (503, "ServiceUnavailable", .retry), (503, "Shutdown", .retry),
    ]

    @Test(arguments: table)
    func documentedAnswer(status: Int, reason: String, action: PushAction) {
        #expect(APNsResponsePolicy.action(status: status, reason: APNsReason(reason)) == action)
        #expect(APNsReason(reason).status == status, "the one table gives the status the emulator answers with")
        #expect(APNsReason(reason).text == reason)
        if case .unknown = APNsReason(reason) { Issue.record("\(reason) must be a known reason") }
    }

    @Test func theTableCoversEveryDocumentedReason() {
        #expect(Set(Self.table.map(\.1)) == Set(APNsReason.documented.map(\.0)))
    }

    @Test func successAndUnknownAnswers() {
        #expect(APNsResponsePolicy.action(status: 200, reason: nil) == .delivered)
        #expect(APNsReason("SomethingNew") == .unknown("SomethingNew"))
        #expect(APNsResponsePolicy.action(status: 502, reason: .unknown("BadGateway")) == .retry)
        #expect(APNsResponsePolicy.action(status: 410, reason: nil) == .deleteToken)
        #expect(APNsResponsePolicy.action(status: 400, reason: .unknown("New")) == .fail)
        #expect(APNsResponsePolicy.action(status: 429, reason: nil) == .retry)
    }
}

@Suite("Push retry schedule", .timeLimit(.minutes(3)))
struct PushRetryPolicyTests {
    @Test(arguments: [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (4, 8.0), (20, 8.0)])
    func backoffIsMinOfPowerOfTwoAndEight(attempt: Int, seconds: Double) {
        #expect(PushRetryPolicy.delay(afterAttempt: attempt, jitter: 0) == seconds)
        #expect(PushRetryPolicy.delay(afterAttempt: attempt, jitter: 0.5) == seconds + 0.25)
        let most = PushRetryPolicy.delay(afterAttempt: attempt, jitter: 1)
        #expect(most < seconds + 0.5 && most > seconds + 0.49)
    }

    @Test func noAttemptAtOrAfterTheExpiration() {
        let now = Date(timeIntervalSince1970: 1000)
        #expect(
            PushRetryPolicy.nextAttempt(after: now, attempt: 0, jitter: 0, expiresAt: now.addingTimeInterval(1.01))
                == now.addingTimeInterval(1))
        #expect(
            PushRetryPolicy.nextAttempt(after: now, attempt: 0, jitter: 0, expiresAt: now.addingTimeInterval(1)) == nil)
        #expect(
            PushRetryPolicy.nextAttempt(after: now, attempt: 3, jitter: 0, expiresAt: now.addingTimeInterval(5)) == nil)
    }
}

@Suite("Provider token timing on a manual clock", .timeLimit(.minutes(3)))
struct ProviderTokenClockTests {
    let start = Date(timeIntervalSince1970: 1_700_000_000)
    func at(_ minutes: Double) -> Date { start.addingTimeInterval(minutes * 60) }

    @Test func mintsFirstThenEvery50Minutes() {
        var clock = ProviderTokenClock()
        #expect(clock.needsNewToken(now: at(0)))
        clock.minted(at: at(0))
        #expect(!clock.needsNewToken(now: at(49.99)))
        #expect(clock.needsNewToken(now: at(50)))
        clock.minted(at: at(50))
        #expect(!clock.needsNewToken(now: at(99)))
    }

    @Test func manyRequestsFailingWithTheSameStaleTokenCauseOneRefresh() {
        var clock = ProviderTokenClock()
        clock.minted(at: at(0))
        // 100 in-flight requests all come back ExpiredProviderToken at minute 30.
        for _ in 0..<100 { clock.rejectedAsExpired(tokenIssuedAt: at(0), now: at(30)) }
        #expect(clock.needsNewToken(now: at(30)))
        clock.minted(at: at(30))
        // Stragglers that carried the old token do not force another one.
        for _ in 0..<100 {
            let refreshed = clock.rejectedAsExpired(tokenIssuedAt: at(0), now: at(30.1))
            #expect(refreshed)
        }
        #expect(!clock.needsNewToken(now: at(30.1)))
    }

    @Test func neverTwoRefreshesWithin20MinutesExceptOnceAfterExpiredProviderToken() {
        var clock = ProviderTokenClock()
        clock.minted(at: at(0))
        // A young token rejected as expired: the one emergency refresh is allowed.
        let refreshed1 = clock.rejectedAsExpired(tokenIssuedAt: at(0), now: at(5))
        #expect(refreshed1)
        clock.minted(at: at(5))
        // Rejected again within 20 minutes: no second refresh.
        let refreshed2 = clock.rejectedAsExpired(tokenIssuedAt: at(5), now: at(10))
        #expect(!refreshed2)
        #expect(!clock.needsNewToken(now: at(10)))
        // Once the token is 20 minutes old, a rejection may refresh again.
        let refreshed3 = clock.rejectedAsExpired(tokenIssuedAt: at(5), now: at(25))
        #expect(refreshed3)
        clock.minted(at: at(25))
        // And after a normal gap the emergency allowance is back.
        #expect(!clock.needsNewToken(now: at(74)))
        #expect(clock.needsNewToken(now: at(75)))
        clock.minted(at: at(75))
        let refreshed4 = clock.rejectedAsExpired(tokenIssuedAt: at(75), now: at(76))
        #expect(refreshed4)
    }
}

@Suite("VoIP push payload and headers", .timeLimit(.minutes(3)))
struct VoIPPushTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func headersAndPayloadFollowSPEC() throws {
        let push = try VoIPPush.build(
            VoIPPayload(
                callId: "c1", scopeKind: .group, scopeId: "g1", mode: .video, callerName: "Alice \"A\"",
                groupName: "Team"),
            bundleID: "com.example.app", apnsID: "8e7a2a6c-0000-4000-8000-000000000001",
            expiresAt: now.addingTimeInterval(44.9), now: now)
        let headers = Dictionary(uniqueKeysWithValues: push.headers)
        #expect(headers["apns-push-type"] == "voip")
        #expect(headers["apns-topic"] == "com.example.app.voip")
        #expect(headers["apns-priority"] == "10")
        #expect(headers["apns-expiration"] == "1800000044")  // rounded down: never after the ring window
        #expect(headers["apns-collapse-id"] == "call_c1")
        #expect(headers["apns-id"] == "8e7a2a6c-0000-4000-8000-000000000001")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(push.payload)) as? [String: Any])
        #expect(object["aps"] as? [String: Any] != nil && (object["aps"] as? [String: Any])?.isEmpty == true)
        #expect(
            object["callId"] as? String == "c1" && object["scopeKind"] as? String == "group"
                && object["scopeId"] as? String == "g1")
        #expect(
            object["mode"] as? String == "video" && object["callerName"] as? String == "Alice \"A\""
                && object["groupName"] as? String == "Team")
        #expect(Set(object.keys) == ["aps", "callId", "scopeKind", "scopeId", "mode", "callerName", "groupName"])
    }

    /// The bytes APNs carries: sorted keys, the empty `aps`, slashes and non-ASCII as they are;
    /// and the SDK's decoder reads back what was built.
    @Test func thePayloadIsOneTypeBuiltAndReadBack() throws {
        let payload = VoIPPayload(
            callId: "c/1", scopeKind: .group, scopeId: "g1", mode: .video, callerName: "张三", groupName: "Team",
            ext: ["room": "r/9"])
        let push = try VoIPPush.build(
            payload, bundleID: "b", apnsID: "id", expiresAt: now.addingTimeInterval(10), now: now)
        #expect(
            String(decoding: push.payload, as: UTF8.self)
                == #"{"aps":{},"callId":"c/1","callerName":"张三","ext":{"room":"r/9"},"groupName":"Team","mode":"video","scopeId":"g1","scopeKind":"group"}"#
        )
        #expect(try VoIPPayload(json: Data(push.payload)) == payload)
        // Lenient as a phone must be: only callId is required.
        let bare = try VoIPPayload(json: Data(#"{"aps":{},"callId":"c2","mode":7}"#.utf8))
        #expect(bare.scopeKind == .conversation && bare.mode == .audio && bare.scopeId == "" && bare.callerName == nil)
        #expect(throws: DecodingError.self) { try VoIPPayload(json: Data(#"{"aps":{}}"#.utf8)) }
    }

    @Test func conversationPushHasNoGroupName() throws {
        let push = try VoIPPush.build(
            VoIPPayload(
                callId: "c1", scopeKind: .conversation, scopeId: "x", mode: .audio, callerName: "A", groupName: nil),
            bundleID: "b", apnsID: "id", expiresAt: now.addingTimeInterval(10), now: now)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(push.payload)) as? [String: Any])
        #expect(object["groupName"] == nil)
    }

    @Test func oversizedPayloadExpiredWindowAndLongCollapseIDAreRefusedBeforeSending() {
        #expect(throws: VoIPPush.Problem.self) {
            try VoIPPush.build(
                VoIPPayload(
                    callId: "c", scopeKind: .group, scopeId: "g", mode: .audio,
                    callerName: String(repeating: "x", count: 6000), groupName: nil),
                bundleID: "b", apnsID: "id", expiresAt: now.addingTimeInterval(10), now: now)
        }
        #expect(throws: VoIPPush.Problem.expired) {
            try VoIPPush.build(
                VoIPPayload(
                    callId: "c", scopeKind: .group, scopeId: "g", mode: .audio, callerName: "a", groupName: nil),
                bundleID: "b", apnsID: "id", expiresAt: now, now: now)
        }
        #expect(throws: VoIPPush.Problem.collapseIDTooLong(65)) {
            try VoIPPush.build(
                VoIPPayload(
                    callId: String(repeating: "c", count: 60), scopeKind: .group, scopeId: "g", mode: .audio,
                    callerName: "a", groupName: nil),
                bundleID: "b", apnsID: "id", expiresAt: now.addingTimeInterval(5), now: now)
        }
    }
}
