import Foundation
import Testing
@testable import SwitchboardPushCore
import SwitchboardPushCore

@Suite("FCM: ring messages, the reason table and the access-token clock", .timeLimit(.minutes(1)))
struct FCMTests {
    static let now = Date(timeIntervalSince1970: 1_900_000_000)

    @Test func aRingIsAStringOnlyDataMessageWithTheRemainingRingWindow() throws {
        let data = try FCMMessage.ringData(
            callID: "c1", scopeKind: "group", scopeID: "g1", mode: "video", callerName: "Ada \"A\"", groupName: "Team",
            expiresAt: Self.now.addingTimeInterval(30.7), now: Self.now)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(data)) as? [String: Any])
        #expect(object.values.allSatisfy { $0 is String }, "FCM data values must be strings")
        #expect(
            object["type"] as? String == "call" && object["callId"] as? String == "c1"
                && object["groupName"] as? String == "Team")
        #expect(object["expiresAt"] as? String == "1900000030")
        let body = FCMMessage.body(token: "tok:en\"1", data: data, collapseKey: "call_c1", ttlSeconds: 27)
        let message = try #require(
            (try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])?["message"] as? [String: Any])
        #expect(message["token"] as? String == "tok:en\"1")
        #expect((message["data"] as? [String: Any])?["callerName"] as? String == "Ada \"A\"")
        let android = try #require(message["android"] as? [String: Any])
        #expect(
            android["priority"] as? String == "HIGH" && android["ttl"] as? String == "27s"
                && android["collapse_key"] as? String == "call_c1")
        #expect(
            FCMMessage.body(token: "t", data: data, collapseKey: "k", ttlSeconds: -3).contains(
                Array(#""ttl":"0s""#.utf8)))
        #expect(throws: FCMMessage.Problem.expired) {
            try FCMMessage.ringData(
                callID: "c", scopeKind: "conversation", scopeID: "s", mode: "audio", callerName: "", groupName: nil,
                expiresAt: Self.now, now: Self.now)
        }
        #expect(throws: FCMMessage.Problem.self) {
            try FCMMessage.ringData(
                callID: "c", scopeKind: "conversation", scopeID: "s", mode: "audio",
                callerName: String(repeating: "x", count: 5000), groupName: nil,
                expiresAt: Self.now.addingTimeInterval(1), now: Self.now)
        }
    }

    @Test func errorBodiesAreReadForTheirCode() {
        let unregistered = Array(
            #"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#
                .utf8)
        #expect(FCMError(body: unregistered).reason == "UNREGISTERED")
        let invalidToken = Array(
            #"{"error":{"code":400,"message":"The registration token is not a valid FCM registration token","status":"INVALID_ARGUMENT"}}"#
                .utf8)
        #expect(FCMError(body: invalidToken).reason == FCMError.invalidRegistrationToken)
        let invalidRequest = Array(
            #"{"error":{"code":400,"message":"Invalid value at 'message.data[0].value'","status":"INVALID_ARGUMENT"}}"#
                .utf8)
        #expect(FCMError(body: invalidRequest).reason == "INVALID_ARGUMENT")
        #expect(FCMError(body: Array("<html>".utf8)).reason == nil)
    }

    @Test(
        arguments: [
            (200, nil, PushAction.delivered),
            (404, "UNREGISTERED", .deleteToken), (400, FCMError.invalidRegistrationToken, .deleteToken),
            (403, "SENDER_ID_MISMATCH", .deleteToken),
            (400, "INVALID_ARGUMENT", .fail), (401, "THIRD_PARTY_AUTH_ERROR", .fail), (403, "PERMISSION_DENIED", .fail),
            (401, "UNAUTHENTICATED", .refreshProviderTokenAndRetry), (401, nil, .refreshProviderTokenAndRetry),
            (429, "QUOTA_EXCEEDED", .retry), (503, "UNAVAILABLE", .retry), (500, "INTERNAL", .retry),
            (502, nil, .retry),
            (404, nil, .fail), (404, "NOT_FOUND", .fail), (418, nil, .fail), (0, "ProviderNotConfigured", .fail),
        ] as [(Int, String?, PushAction)])
    func theReasonTable(status: Int, reason: String?, action: PushAction) {
        #expect(FCMResponsePolicy.action(status: status, reason: reason) == action)
    }

    @Test func accessTokensAreReplacedBeforeTheyExpireAndOnceWhenRejected() {
        var clock = AccessTokenClock()
        #expect(clock.needsNewToken(now: Self.now))
        clock.issued(at: Self.now, lifetime: 3599)
        #expect(!clock.needsNewToken(now: Self.now.addingTimeInterval(3599 - 301)))
        #expect(clock.needsNewToken(now: Self.now.addingTimeInterval(3599 - 300)), "five minutes before expiry")
        #expect(
            clock.isUsable(now: Self.now.addingTimeInterval(3599 - 300)), "still sent while its replacement is fetched")
        #expect(!clock.isUsable(now: Self.now.addingTimeInterval(3599)), "not once expired")
        // Rejected: a new one at once; many rejections of the same token are one refresh.
        clock.rejected(tokenIssuedAt: Self.now)
        clock.rejected(tokenIssuedAt: Self.now)
        #expect(clock.needsNewToken(now: Self.now.addingTimeInterval(1)))
        #expect(!clock.isUsable(now: Self.now.addingTimeInterval(1)), "a rejected token is not sent again")
        let later = Self.now.addingTimeInterval(2)
        clock.issued(at: later, lifetime: 3599)
        #expect(!clock.needsNewToken(now: later))
        // Late answers about the token already replaced change nothing.
        clock.rejected(tokenIssuedAt: Self.now)
        #expect(!clock.needsNewToken(now: later.addingTimeInterval(1)))
    }
}

@Suite("Huawei Push Kit: the message and the result codes", .timeLimit(.minutes(1)))
struct HuaweiTests {
    @Test func aRingIsAHighUrgencyDataMessageForOneToken() throws {
        let body = HuaweiMessage.body(
            token: "tok/1", data: Array(#"{"callId":"c1","type":"call"}"#.utf8), ttlSeconds: 31)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(object["validate_only"] as? Bool == false)
        let message = try #require(object["message"] as? [String: Any])
        #expect(message["token"] as? [String] == ["tok/1"])
        #expect(message["data"] as? String == #"{"callId":"c1","type":"call"}"#, "Huawei's data is one string")
        let android = try #require(message["android"] as? [String: Any])
        #expect(android["urgency"] as? String == "HIGH" && android["ttl"] as? String == "31s")
        #expect(
            HuaweiMessage.code(in: Array(#"{"code":"80300007","msg":"All the tokens are invalid"}"#.utf8)) == "80300007"
        )
        #expect(HuaweiMessage.code(in: Array("<html>".utf8)) == nil)
    }

    @Test(
        arguments: [
            (200, "80000000", PushAction.delivered), (200, "80300007", .deleteToken),
            (401, "80200003", .refreshProviderTokenAndRetry),
            (200, "80200001", .refreshProviderTokenAndRetry), (400, "80100003", .fail), (200, nil, .fail),
            (200, "80100000", .fail),
            (503, nil, .retry), (429, nil, .retry), (401, nil, .refreshProviderTokenAndRetry),
            (0, "ProviderNotConfigured", .fail),
        ] as [(Int, String?, PushAction)])
    func theResultCodeTable(status: Int, code: String?, action: PushAction) {
        #expect(HuaweiResponsePolicy.action(status: status, reason: code) == action)
    }
}
