import Foundation
import Testing
import SwitchboardPushCore

private let ring = Array(
    #"{"callId":"call-7","callerName":"Alice","expiresAt":"1800000000","mode":"video","scopeId":"c1","scopeKind":"conversation","type":"call"}"#
        .utf8)
private let missed = Array(
    #"{"callId":"call-7","callerName":"Alice","reason":"missed","scopeId":"c1","scopeKind":"conversation","type":"call_ended"}"#
        .utf8)
private let cancelled = Array(
    #"{"callId":"call-7","callerName":"Alice","reason":"cancelled","scopeId":"c1","scopeKind":"conversation","type":"call_ended"}"#
        .utf8)

@Suite("Android makers' notifications: the text, the data, one id per call", .timeLimit(.minutes(1)))
struct VendorNotificationTests {
    @Test func aRingAndAMissedCallShowTheCallerAndTheOtherEndingsShowNothing() throws {
        let rung = try #require(VendorNotification.from(data: ring))
        #expect(rung.title == "Alice" && rung.content == "Incoming video call")
        #expect(rung.data["callId"] == "call-7" && rung.data["type"] == "call" && rung.data.count == 7)
        let group = try #require(
            VendorNotification.from(
                data: Array(#"{"callId":"g","callerName":"Bo","groupName":"Team","mode":"audio","type":"call"}"#.utf8)))
        #expect(group.title == "Team" && group.content == "Incoming audio call from Bo")
        let lost = try #require(VendorNotification.from(data: missed))
        #expect(lost.title == "Missed call" && lost.content == "Missed call from Alice")
        #expect(VendorNotification.from(data: cancelled) == nil)
        #expect(VendorNotification.from(data: Array("not json".utf8)) == nil)
        let nameless = try #require(
            VendorNotification.from(data: Array(#"{"callId":"x","callerName":"","type":"call"}"#.utf8)))
        #expect(nameless.title == "Unknown caller")
    }

    /// Each service counts in its own units: vivo an ASCII character one and any other two,
    /// OPPO and Xiaomi one per scalar. Text is cut only between graphemes, with `…` after it.
    @Test(
        arguments: [
            // (limits, text, limit, expected length in units, expected result)
            (VendorTextLimits.vivo, "Alice", 40, 5, "Alice"),
            (.vivo, "张三", 40, 4, "张三"),
            (.vivo, String(repeating: "张", count: 20), 40, 40, String(repeating: "张", count: 20)),
            (.vivo, String(repeating: "张", count: 21), 40, 42, String(repeating: "张", count: 19) + "…"),
            (.vivo, "a" + String(repeating: "张", count: 20), 40, 41, "a" + String(repeating: "张", count: 18) + "…"),
            (.vivo, "👍🏽👍🏽", 6, 8, "👍🏽…"),
            (.vivo, "e\u{301}e\u{301}e\u{301}", 5, 9, "e\u{301}…"),
            (.oppo, String(repeating: "张", count: 50), 50, 50, String(repeating: "张", count: 50)),
            (.oppo, String(repeating: "张", count: 51), 50, 51, String(repeating: "张", count: 49) + "…"),
            (.oppo, "👨‍👩‍👧" + "abc", 5, 8, "…"),
            (.xiaomi, String(repeating: "名", count: 60), 49, 60, String(repeating: "名", count: 48) + "…"),
        ])
    func textIsMeasuredAndCutTheServicesWay(
        limits: VendorTextLimits, text: String, limit: Int, length: Int, expected: String
    ) {
        #expect(limits.length(of: text) == length)
        let clipped = limits.clipped(text, to: limit)
        #expect(clipped == expected)
        #expect(limits.length(of: clipped) <= limit)
        #expect(expected.hasSuffix("…") || clipped == text)
    }

    /// A long Chinese name still rings on vivo: the message is within vivo's width units.
    @Test func aLongChineseNameFitsEveryService() throws {
        let name = String(repeating: "欧阳", count: 15) + "娜娜"
        let data = Array(
            #"{"callId":"c","callerName":"\#(name)","groupName":"\#(name)项目组","mode":"video","type":"call"}"#.utf8)
        let whole = try #require(VendorNotification.from(data: data))
        for limits in [VendorTextLimits.vivo, .oppo, .xiaomi] {
            let fitted = whole.fitted(to: limits)
            #expect(
                limits.length(of: fitted.title) <= limits.title && limits.length(of: fitted.content) <= limits.content)
            #expect(fitted.title.hasPrefix("欧阳") && fitted.data == whole.data)
        }
        let body = try #require(
            VivoMessage.sendBody(appID: "1", registrationID: "r", data: data, ttlSeconds: 60, requestID: "j"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(VendorTextLimits.vivo.length(of: object["title"] as? String ?? "") <= 40)
        #expect(VendorTextLimits.vivo.length(of: object["content"] as? String ?? "") <= 100)
    }

    /// OPPO and vivo show every ending in place of the ring (same notification id); Xiaomi
    /// shows the missed call and carries the others silently.
    @Test func everyEndingHasATextWhereTheServiceNeedsOne() throws {
        let endings = [
            "answered_elsewhere": "Answered on another device",
            "declined_elsewhere": "Declined on another device", "cancelled": "Call cancelled",
            "missed": "Missed call from Alice",
        ]
        for (reason, text) in endings {
            let data = Array(
                #"{"callId":"call-7","callerName":"Alice","reason":"\#(reason)","type":"call_ended"}"#.utf8)
            let shown = try #require(VendorNotification.from(data: data, everyEnding: true))
            #expect(shown.content == text)
            let vivo = try #require(
                VivoMessage.sendBody(appID: "1", registrationID: "r", data: data, ttlSeconds: 60, requestID: "j"))
            let object = try #require(try JSONSerialization.jsonObject(with: Data(vivo)) as? [String: Any])
            #expect(object["notifyId"] as? Int == VendorNotification.notifyID(callID: "call-7"))
            #expect(object["content"] as? String == text)
            let oppo = OPPOMessage.unicastForm(
                authToken: "t", registrationID: "r", data: data, ttlSeconds: 60, channelID: "calls")
            #expect(oppo != nil)
            let xiaomi = FormEncoding.fields(
                XiaomiMessage.form(
                    registrationID: "r", packageName: "p", data: data, ttlMilliseconds: 1, channelID: nil))
            #expect(xiaomi["pass_through"] == (reason == "missed" ? "0" : "1"))
        }
    }

    @Test func theNotificationIDIsStablePerCallAndInRange() {
        let ids = (0..<2_000).map { VendorNotification.notifyID(callID: "call-\($0)") }
        #expect(ids.allSatisfy { (1...2_147_483_647).contains($0) })
        #expect(Set(ids).count > 1_990, "calls rarely share an id")
        #expect(VendorNotification.notifyID(callID: "call-7") == VendorNotification.notifyID(callID: "call-7"))
    }

    @Test func formsRoundTripEveryCharacter() {
        let fields = [("payload", #"{"a":"b & c=d+e"}"#), ("title", "来电 Alice ✓"), ("empty", "")]
        let body = FormEncoding.body(fields)
        #expect(!String(decoding: body, as: UTF8.self).contains(" "))
        #expect(FormEncoding.fields(body) == Dictionary(uniqueKeysWithValues: fields))
        #expect(FormEncoding.fields(Array("a=x+y&b".utf8)) == ["a": "x y", "b": ""])
    }
}

@Suite("Xiaomi MiPush: the form and the result codes", .timeLimit(.minutes(1)))
struct XiaomiTests {
    @Test func aRingIsANotificationCarryingTheDataUnderTheCallsNotifyID() throws {
        let form = FormEncoding.fields(
            XiaomiMessage.form(
                registrationID: "reg/1", packageName: "com.example.app", data: ring, ttlMilliseconds: 29_500,
                channelID: "calls"))
        #expect(form["registration_id"] == "reg/1" && form["restricted_package_name"] == "com.example.app")
        #expect(form["pass_through"] == "0" && form["notify_type"] == "-1" && form["time_to_live"] == "29500")
        #expect(
            form["title"] == "Alice" && form["description"] == "Incoming video call"
                && form["extra.channel_id"] == "calls")
        #expect(form["notify_id"] == String(VendorNotification.notifyID(callID: "call-7")))
        #expect(VendorNotification.fields(of: Array((form["payload"] ?? "").utf8))?["callId"] == "call-7")
        let notice = FormEncoding.fields(
            XiaomiMessage.form(
                registrationID: "reg/1", packageName: "com.example.app", data: missed, ttlMilliseconds: 1000,
                channelID: nil))
        #expect(notice["notify_id"] == form["notify_id"], "the missed call replaces the ringing notification")
        #expect(notice["extra.channel_id"] == nil)
        let silent = FormEncoding.fields(
            XiaomiMessage.form(
                registrationID: "reg/1", packageName: "com.example.app", data: cancelled, ttlMilliseconds: -5,
                channelID: "calls"))
        #expect(
            silent["pass_through"] == "1" && silent["title"] == nil && silent["time_to_live"] == "1", "never 0 (unset)")
        #expect(silent["payload"].map { Array($0.utf8) } == cancelled)
    }

    @Test func theResultNamesABadRegistrationIDInAnOtherwiseGoodAnswer() {
        #expect(
            XiaomiMessage.result(in: Array(#"{"result":"ok","code":0,"data":{"id":"m1"}}"#.utf8), registrationID: "r")!
                == (0, false))
        #expect(
            XiaomiMessage.result(
                in: Array(#"{"result":"ok","code":0,"data":{"bad_regids":"q,r"}}"#.utf8), registrationID: "r")! == (
                    0, true
                ))
        #expect(
            XiaomiMessage.result(
                in: Array(#"{"result":"error","code":20301,"reason":"No valid targets"}"#.utf8), registrationID: "r")!
                == (20301, false))
        #expect(XiaomiMessage.result(in: Array("<html>".utf8), registrationID: "r") == nil)
    }

    @Test(
        arguments: [
            (200, "0", PushAction.delivered), (200, "20301", .deleteToken), (200, "10003", .retry),
            (200, "10027", .retry), (200, "200001", .retry),
            (401, "22008", .fail), (200, "22022", .fail), (200, "10017", .fail), (503, nil, .retry), (503, "0", .retry),
            (429, nil, .retry),
            (200, nil, .fail), (0, "ProviderNotConfigured", .fail),
        ] as [(Int, String?, PushAction)])
    func theResultCodeTable(status: Int, code: String?, action: PushAction) {
        #expect(XiaomiResponsePolicy.action(status: status, reason: code) == action)
    }
}

@Suite("OPPO push: the signature, the unicast and the result codes", .timeLimit(.minutes(1)))
struct OPPOTests {
    @Test func aRingIsANotificationOnTheAppsCallChannel() throws {
        #expect(
            OPPOMessage.signInput(appKey: "k", timestampMilliseconds: 1_700_000_000_123, masterSecret: "m")
                == "k1700000000123m")
        let form = FormEncoding.fields(
            try #require(
                OPPOMessage.unicastForm(
                    authToken: "tok", registrationID: "CN_reg", data: ring, ttlSeconds: 30, channelID: "calls")))
        #expect(form["auth_token"] == "tok")
        let message = try #require(
            try JSONSerialization.jsonObject(with: Data((form["message"] ?? "").utf8)) as? [String: Any])
        #expect(message["target_type"] as? Int == 2 && message["target_value"] as? String == "CN_reg")
        let notification = try #require(message["notification"] as? [String: Any])
        #expect(notification["title"] as? String == "Alice" && notification["channel_id"] as? String == "calls")
        #expect(notification["off_line_ttl"] as? Int == 30 && notification["off_line"] as? Bool == true)
        #expect(notification["notify_id"] as? Int == VendorNotification.notifyID(callID: "call-7"))
        #expect(
            VendorNotification.fields(of: Array(((notification["action_parameters"] as? String) ?? "").utf8))?["type"]
                == "call")
        #expect(
            OPPOMessage.unicastForm(
                authToken: "t", registrationID: "r", data: Array("[1]".utf8), ttlSeconds: 30, channelID: "c") == nil,
            "not a data object")
        #expect(OPPOMessage.code(in: Array(#"{"code":11,"message":"Invalid AuthToken"}"#.utf8)) == 11)
    }

    @Test(
        arguments: [
            (200, "0", PushAction.delivered), (200, "11", .refreshProviderTokenAndRetry),
            (200, "29", .refreshProviderTokenAndRetry),
            (200, "10000", .deleteToken), (200, "-1", .retry), (200, "-2", .retry), (200, "33", .retry),
            (200, "55", .retry),
            (200, "16", .fail), (200, "41", .fail), (502, nil, .retry), (200, nil, .fail),
            (400, "NothingToShow", .fail),
        ] as [(Int, String?, PushAction)])
    func theResultCodeTable(status: Int, code: String?, action: PushAction) {
        #expect(OPPOResponsePolicy.action(status: status, reason: code) == action)
    }
}

@Suite("vivo push: the signature, the message and the result codes", .timeLimit(.minutes(1)))
struct VivoTests {
    @Test func aRingIsASystemIMNotificationWithTheJobAsItsRequestID() throws {
        #expect(VivoMessage.signInput(appID: "1", appKey: "k", timestampMilliseconds: 5, appSecret: "s") == "1k5s")
        let body = try #require(
            VivoMessage.sendBody(appID: "1", registrationID: "reg", data: ring, ttlSeconds: 30, requestID: "job-1"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        #expect(
            object["regId"] as? String == "reg" && object["requestId"] as? String == "job-1"
                && object["appId"] as? String == "1")
        #expect(object["timeToLive"] as? Int == 60, "vivo's shortest time to live")
        #expect(object["classification"] as? Int == 1 && object["category"] as? String == "IM")
        #expect((object["clientCustomMap"] as? [String: String])?["callId"] == "call-7")
        let long = try #require(
            VivoMessage.sendBody(appID: "1", registrationID: "r", data: missed, ttlSeconds: 86_400 * 30, requestID: "j")
        )
        #expect(
            (try JSONSerialization.jsonObject(with: Data(long)) as? [String: Any])?["timeToLive"] as? Int == 604_800)
        #expect(
            VivoMessage.sendBody(
                appID: "1", registrationID: "r", data: Array("[1]".utf8), ttlSeconds: 30, requestID: "j")
                == nil, "not a data object")
        #expect(
            VivoMessage.result(in: Array(#"{"result":0,"desc":"ok","invalidUser":{"userid":"r","status":2}}"#.utf8))!
                == (0, true))
        #expect(VivoMessage.result(in: Array(#"{"result":10302,"desc":"regId 不合法"}"#.utf8))! == (10302, false))
        #expect((try? VivoMessage.authToken(in: Array(#"{"result":0,"authToken":"abc"}"#.utf8)).get()) == "abc")
        #expect((try? VivoMessage.authToken(in: Array(#"{"result":10206,"desc":"sign 不合法"}"#.utf8)).get()) == nil)
    }

    @Test(
        arguments: [
            (200, "0", PushAction.delivered), (200, "10000", .refreshProviderTokenAndRetry),
            (200, "10302", .deleteToken),
            (200, "invalidUser", .deleteToken), (200, "10070", .retry), (200, "10072", .retry), (200, "10206", .fail),
            (200, "10094", .fail),
            (500, nil, .retry), (200, nil, .fail),
        ] as [(Int, String?, PushAction)])
    func theResultCodeTable(status: Int, code: String?, action: PushAction) {
        #expect(VivoResponsePolicy.action(status: status, reason: code) == action)
    }
}
