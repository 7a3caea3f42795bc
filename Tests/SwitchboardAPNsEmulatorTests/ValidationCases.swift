import SwitchboardAPNsEmulator
import SwitchboardCrypto
import Testing

/// One invalid push and the answer APNs gives it; shared by the pure table test and the live
/// one over loopback.
struct ValidationCase: Sendable, CustomTestStringConvertible {
    let name: String
    let request: TestRequest
    let status: Int
    let reason: String

    var testDescription: String { "\(name) → \(status) \(reason)" }

    static let token = Fixture.deviceToken(0xABC)

    /// The valid push with header `name` replaced by `value` (or removed when `nil`).
    static func with(_ name: String, _ value: String?, body: [UInt8]? = nil) -> TestRequest {
        var headers = Fixture.pushHeaders().filter { $0.0 != name }
        if let value { headers.append((name, value)) }
        return TestRequest("POST", "/3/device/\(token)", headers: headers, body: body ?? Fixture.payload())
    }

    static func make(_ name: String, _ request: TestRequest, _ status: Int, _ reason: String) -> ValidationCase {
        ValidationCase(name: name, request: request, status: status, reason: reason)
    }

    static let all: [ValidationCase] = {
        let other = try! ES256PrivateKey.generate()
        let valid = Fixture.pushHeaders()
        var cases: [ValidationCase] = [
            make(
                "unknown path", TestRequest("POST", "/3/devices/\(token)", headers: valid, body: Fixture.payload()),
                404, "BadPath"),
            make(
                "GET on a push path", TestRequest("GET", "/3/device/\(token)", headers: valid), 405, "MethodNotAllowed"),
            make(
                "no device token", TestRequest("POST", "/3/device/", headers: valid, body: Fixture.payload()), 400,
                "MissingDeviceToken"),
            make(
                "duplicate apns-topic",
                TestRequest(
                    "POST", "/3/device/\(token)", headers: valid + [("apns-topic", Fixture.topic)],
                    body: Fixture.payload()),
                400, "DuplicateHeaders"),
            make("no authorization", with("authorization", nil), 403, "MissingProviderToken"),
            make("basic instead of bearer", with("authorization", "basic abc"), 403, "InvalidProviderToken"),
            make("garbage JWT", with("authorization", "bearer not.a.jwt"), 403, "InvalidProviderToken"),
            make(
                "JWT from another key", with("authorization", "bearer \(Fixture.providerToken(key: other))"), 403,
                "InvalidProviderToken"),
            make(
                "JWT with another kid", with("authorization", "bearer \(Fixture.providerToken(keyID: "ZZZ999ZZZZ"))"),
                403, "InvalidProviderToken"),
            make(
                "JWT with another iss", with("authorization", "bearer \(Fixture.providerToken(teamID: "ZZZ999ZZZZ"))"),
                403, "InvalidProviderToken"),
            make(
                "JWT issued 61 minutes ago", with("authorization", "bearer \(Fixture.providerToken(age: 3660))"), 403,
                "ExpiredProviderToken"),
            make(
                "JWT issued 2 minutes ahead", with("authorization", "bearer \(Fixture.providerToken(age: -120))"), 403,
                "InvalidProviderToken"),
            make(
                "token not hex",
                TestRequest(
                    "POST", "/3/device/\(String(repeating: "zz", count: 32))", headers: valid, body: Fixture.payload()),
                400, "BadDeviceToken"),
            make(
                "token too short",
                TestRequest("POST", "/3/device/abcdef", headers: valid, body: Fixture.payload()), 400, "BadDeviceToken"),
            make("no apns-topic", with("apns-topic", nil), 400, "MissingTopic"),
            make("topic with a space", with("apns-topic", "com.example app.voip"), 400, "BadTopic"),
            make("the app topic, not .voip", with("apns-topic", Fixture.bundleID), 400, "TopicDisallowed"),
            make("another app's .voip topic", with("apns-topic", "com.other.app.voip"), 400, "TopicDisallowed"),
            make("no apns-push-type", with("apns-push-type", nil), 400, "InvalidPushType"),
            make("alert push type on the .voip topic", with("apns-push-type", "alert"), 400, "InvalidPushType"),
            make(
                "location push type on the app topic",
                TestRequest(
                    "POST", "/3/device/\(token)",
                    headers: Fixture.pushHeaders().filter { $0.0 != "apns-topic" && $0.0 != "apns-push-type" }
                        + [("apns-topic", Fixture.bundleID), ("apns-push-type", "location")], body: Fixture.payload()),
                400, "InvalidPushType"),
            make(
                "alert push for another app",
                TestRequest(
                    "POST", "/3/device/\(token)",
                    headers: Fixture.pushHeaders().filter { $0.0 != "apns-topic" && $0.0 != "apns-push-type" }
                        + [("apns-topic", "com.other.app"), ("apns-push-type", "alert")], body: Fixture.payload()), 400,
                "TopicDisallowed"),
            make("priority 1", with("apns-priority", "1"), 400, "BadPriority"),
            make("priority high", with("apns-priority", "high"), 400, "BadPriority"),
            make("expiration not an integer", with("apns-expiration", "tomorrow"), 400, "BadExpirationDate"),
            make(
                "collapse id of 65 bytes", with("apns-collapse-id", String(repeating: "c", count: 65)), 400,
                "BadCollapseId"),
            make("apns-id uppercase", with("apns-id", "0F8FAD5B-D9CB-469F-A165-70867728950E"), 400, "BadMessageId"),
            make("apns-id not a UUID", with("apns-id", "call-42"), 400, "BadMessageId"),
            make("empty payload", with("apns-priority", "10", body: []), 400, "PayloadEmpty"),
            make("payload of 5121 bytes", with("apns-priority", "10", body: bigPayload(5121)), 413, "PayloadTooLarge"),
            make("payload not JSON", with("apns-priority", "10", body: Array("call 42".utf8)), 400, "BadPayload"),
            make("payload a JSON array", with("apns-priority", "10", body: Array("[1,2]".utf8)), 400, "BadPayload"),
        ]
        cases.sort { $0.status < $1.status }
        return cases
    }()

    /// A JSON object of exactly `size` bytes.
    static func bigPayload(_ size: Int) -> [UInt8] {
        let frame = #"{"aps":{},"pad":""}"#
        return Array(#"{"aps":{},"pad":"\#(String(repeating: "x", count: size - frame.utf8.count))"}"#.utf8)
    }
}
