import Foundation
import Testing
@testable import SwitchboardPush
import SwitchboardPushCore

@Suite("The ios-alert channel: notices as APNs alert and background pushes", .timeLimit(.minutes(1)))
struct APNsAlertChannelTests {
    static let now = Date(timeIntervalSince1970: 1_900_000_000)
    static let channel = APNsAlertChannel(sharingWith: APNsVoIPChannel(unconfiguredFor: "com.example.phone"))

    static func notice(_ reason: String, caller: String = "Ada") -> PushNotice {
        PushNotice(
            callID: "c1", scopeKind: "conversation", scopeID: "s1", callerName: caller, reason: reason, jobID: "job-1",
            expiresAt: now.addingTimeInterval(60), now: now)
    }

    @Test func aMissedCallIsAnAlertAndEveryOtherEndingABackgroundPush() throws {
        let missed = try #require(try Self.channel.noticeRequest(for: Self.notice("missed")))
        let headers = Dictionary(uniqueKeysWithValues: missed.headers)
        #expect(
            headers["apns-push-type"] == "alert" && headers["apns-priority"] == "10"
                && headers["apns-topic"] == "com.example.phone")
        #expect(
            headers["apns-collapse-id"] == "call_c1" && headers["apns-id"] == "job-1"
                && headers["apns-expiration"] == "1900000060")
        let payload = try #require(try JSONSerialization.jsonObject(with: Data(missed.payload)) as? [String: Any])
        #expect(payload["type"] as? String == "call_missed")
        #expect(((payload["aps"] as? [String: Any])?["alert"] as? [String: String])?["body"] == "Missed call from Ada")

        for reason in ["cancelled", "answered_elsewhere", "declined_elsewhere"] {
            let request = try #require(try Self.channel.noticeRequest(for: Self.notice(reason)))
            let headers = Dictionary(uniqueKeysWithValues: request.headers)
            #expect(
                headers["apns-push-type"] == "background" && headers["apns-priority"] == "5",
                "background pushes must be priority 5")
            let payload = try #require(try JSONSerialization.jsonObject(with: Data(request.payload)) as? [String: Any])
            #expect(payload["type"] as? String == "call_ended" && payload["reason"] as? String == reason)
            #expect((payload["aps"] as? [String: Any])?["alert"] == nil)
        }
        #expect(
            try Self.channel.noticeRequest(for: Self.notice("missed", caller: "")).map {
                String(decoding: $0.payload, as: UTF8.self)
            }?
            .contains("Missed call from Unknown caller") == true)
    }

    /// The alert is in the device's language; with the app's own strings asked for, the
    /// loc-keys ride along (iOS uses them instead of title and body).
    @Test func aMissedCallAlertIsInTheDevicesLanguageAndCanCarryLocKeys() throws {
        func alert(_ channel: APNsAlertChannel, _ locale: String?) throws -> [String: Any] {
            var notice = Self.notice("missed", caller: "张三")
            notice.locale = locale
            let request = try #require(try channel.noticeRequest(for: notice))
            let payload = try #require(try JSONSerialization.jsonObject(with: Data(request.payload)) as? [String: Any])
            return try #require((payload["aps"] as? [String: Any])?["alert"] as? [String: Any])
        }
        let chinese = try alert(Self.channel, "zh-Hant-TW")
        #expect(chinese["title"] as? String == "未接來電" && chinese["body"] as? String == "张三 的未接來電")
        #expect(chinese["loc-key"] == nil, "no keys unless the app words its alerts")
        #expect(try alert(Self.channel, "de-AT")["body"] as? String == "Verpasster Anruf von 张三")
        #expect(try alert(Self.channel, "pt-BR")["body"] as? String == "Missed call from 张三")
        let keyed = APNsAlertChannel(
            sharingWith: APNsVoIPChannel(unconfiguredFor: "com.example.phone"), localizationKeys: true)
        let withKeys = try alert(keyed, "ja")
        #expect(withKeys["title-loc-key"] as? String == "SWITCHBOARD_MISSED_CALL")
        #expect(withKeys["loc-key"] as? String == "SWITCHBOARD_MISSED_CALL_FROM")
        #expect(withKeys["loc-args"] as? [String] == ["张三"])
        #expect(withKeys["body"] as? String == "张三さんからの不在着信")
    }

    @Test func itNeverRingsAndTheVoIPChannelNeverCarriesANotice() throws {
        let ring = PushRing(
            callID: "c", scopeKind: "conversation", scopeID: "s", mode: "audio", callerName: "", groupName: nil,
            jobID: "j",
            expiresAt: Self.now.addingTimeInterval(30), now: Self.now)
        #expect(throws: NotARingChannel.self) { try Self.channel.ringRequest(for: ring) }
        #expect(
            try APNsVoIPChannel(unconfiguredFor: "com.example.phone").noticeRequest(for: Self.notice("missed")) == nil)
        #expect(!Self.channel.summary.configured, "configured exactly when the VoIP channel is")
    }
}

@Suite("FCM's verdicts", .timeLimit(.minutes(1)))
struct FCMVerdictTests {
    /// A QUOTA_EXCEEDED without Retry-After is the project's minute quota: a minute at least.
    /// One with Retry-After (a device's message rate, an overload) waits what it says.
    @Test func quotaExceededWaitsWhatItSaysOrAMinute() {
        let channel = FCMChannel()
        let bare = channel.verdict(for: .response(status: 429, reason: "QUOTA_EXCEEDED"))
        #expect(bare.action == .retry && bare.retryAfter == 60)
        #expect(channel.verdict(for: .response(status: 429, reason: "QUOTA_EXCEEDED", retryAfter: 2)).retryAfter == 2)
        #expect(
            channel.verdict(for: .response(status: 429, reason: "QUOTA_EXCEEDED", retryAfter: 120)).retryAfter == 120)
        #expect(channel.verdict(for: .response(status: 503, reason: "UNAVAILABLE", retryAfter: 5)).retryAfter == 5)
        #expect(channel.verdict(for: .response(status: 503, reason: "UNAVAILABLE")).retryAfter == nil)
    }

    /// The makers' day quotas wait an hour; their rate limits do not.
    @Test func aMakersDailyQuotaWaitsAnHour() {
        for (channel, quota, rate) in [
            (VendorChannel.oppo(transport: nil), "33", "55"), (.vivo(transport: nil), "10070", "10072"),
            (.xiaomi(transport: nil), "200001", "10027"),
        ] {
            let over = channel.verdict(for: .response(status: 200, reason: quota))
            #expect(
                over.action == .retry && over.retryAfter == ResultCodeTable.quotaRetryFloor, "\(channel.name) \(quota)")
            let busy = channel.verdict(for: .response(status: 200, reason: rate))
            #expect(busy.action == .retry && busy.retryAfter == nil, "\(channel.name) \(rate)")
        }
    }
}
