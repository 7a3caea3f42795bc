import SwitchboardCrypto
import Testing

@testable import SwitchboardAPNsEmulator
import SwitchboardPushCore

/// The validation rules, pure: no sockets, a fixed clock.
@Suite(.timeLimit(.minutes(3))) struct PushValidatorTests {
    var validator = PushValidator(policy: Fixture.configuration().validationPolicy)

    static func request(_ test: TestRequest) -> EmulatorRequest {
        EmulatorRequest(
            method: test.method, path: test.path, headers: test.headers.map { APNsHeader($0.0, $0.1) },
            body: test.body ?? [])
    }

    @Test(arguments: ValidationCase.all)
    mutating func rejects(_ invalid: ValidationCase) {
        guard
            case .rejected(let rejection, _, _) = validator.validate(
                Self.request(invalid.request), nowMilliseconds: Fixture.nowMilliseconds)
        else {
            Issue.record("accepted")
            return
        }
        #expect(rejection.status == invalid.status)
        #expect(rejection.reason == invalid.reason)
    }

    @Test mutating func acceptsAValidPushAndForwardsItsHeaders() {
        let apnsID = "0f8fad5b-d9cb-469f-a165-70867728950e"
        let token = Fixture.deviceToken(7).uppercased()
        let outcome = validator.validate(
            Self.request(Fixture.push(to: token, apnsID: apnsID)), nowMilliseconds: Fixture.nowMilliseconds)
        guard case .accepted(let push) = outcome else {
            Issue.record("rejected: \(outcome)")
            return
        }
        #expect(push.deviceToken == token.lowercased())
        #expect(push.apnsID == apnsID)
        #expect(push.payload == Fixture.payload())
        #expect(
            push.headers.map(\.name) == [
                "apns-topic", "apns-push-type", "apns-priority", "apns-expiration", "apns-collapse-id",
            ])
    }

    /// Notices: alert and background pushes go to the app's own topic.
    @Test(arguments: ["alert", "background"]) mutating func acceptsOrdinaryPushesToTheAppTopic(type: String) {
        let headers =
            Fixture.pushHeaders().filter { $0.0 != "apns-topic" && $0.0 != "apns-push-type" }
            + [("apns-topic", Fixture.bundleID), ("apns-push-type", type)]
        let request = TestRequest(
            "POST", "/3/device/\(ValidationCase.token)", headers: headers, body: Fixture.payload())
        guard
            case .accepted(let push) = validator.validate(
                Self.request(request), nowMilliseconds: Fixture.nowMilliseconds)
        else {
            Issue.record("\(type) push to the app topic rejected")
            return
        }
        #expect(push.headers.contains(APNsHeader("apns-push-type", type)))
    }

    @Test mutating func acceptsAPayloadOfExactly5120Bytes() {
        let request = ValidationCase.with("apns-priority", "5", body: ValidationCase.bigPayload(5120))
        guard case .accepted = validator.validate(Self.request(request), nowMilliseconds: Fixture.nowMilliseconds)
        else {
            Issue.record("5120 bytes rejected")
            return
        }
    }

    @Test mutating func acceptsATokenJustUnderAnHourOldAndRejectsItOnceTheHourIsOver() {
        let token = Fixture.providerToken(age: 0)
        let request = Self.request(Fixture.push(to: ValidationCase.token, headers: Fixture.pushHeaders(token: token)))
        let fresh = validator.validate(request, nowMilliseconds: Fixture.nowMilliseconds + 3_599_000)
        guard case .accepted = fresh else {
            Issue.record("rejected at 59:59: \(fresh)")
            return
        }
        // The same token, now cached as verified, still has its age checked.
        guard
            case .rejected(let rejection, _, _) = validator.validate(
                request, nowMilliseconds: Fixture.nowMilliseconds + 3_601_000)
        else {
            Issue.record("accepted at 60:01")
            return
        }
        #expect(rejection.reason == "ExpiredProviderToken")
    }

    @Test func withoutAPublicKeyOnlyTheStructureIsChecked() {
        var policy = Fixture.configuration().validationPolicy
        policy.token.publicKey = nil
        var lenient = PushValidator(policy: policy)
        let forged = try! ES256PrivateKey.generate()
        let accepted = lenient.validate(
            Self.request(
                Fixture.push(
                    to: ValidationCase.token, headers: Fixture.pushHeaders(token: Fixture.providerToken(key: forged)))),
            nowMilliseconds: Fixture.nowMilliseconds)
        guard case .accepted = accepted else {
            Issue.record("a structurally valid token was rejected: \(accepted)")
            return
        }
        let garbage = lenient.validate(
            Self.request(ValidationCase.with("authorization", "bearer a.b.c")), nowMilliseconds: Fixture.nowMilliseconds
        )
        guard case .rejected(let rejection, _, _) = garbage else {
            Issue.record("garbage accepted")
            return
        }
        #expect(rejection.reason == "InvalidProviderToken")
    }

    @Test func withoutABundleIDAnyVoIPTopicIsAllowed() {
        var policy = Fixture.configuration().validationPolicy
        policy.bundleID = nil
        var open = PushValidator(policy: policy)
        let other = open.validate(
            Self.request(ValidationCase.with("apns-topic", "org.other.voip")), nowMilliseconds: Fixture.nowMilliseconds)
        guard case .accepted = other else {
            Issue.record("rejected: \(other)")
            return
        }
        let plain = open.validate(
            Self.request(ValidationCase.with("apns-topic", "org.other")), nowMilliseconds: Fixture.nowMilliseconds)
        guard case .rejected(let rejection, _, _) = plain else {
            Issue.record("a non-VoIP topic was accepted")
            return
        }
        #expect(rejection.reason == "TopicDisallowed")
    }

    @Test func everyDocumentedReasonHasTheStatusAPNsAnswersWith() {
        #expect(APNsReason.documented.count == 34)
        let byStatus = Dictionary(grouping: APNsReason.documented.map(\.1), by: { $0.status ?? 0 }).mapValues {
            $0.count
        }
        #expect(byStatus == [400: 15, 403: 9, 404: 1, 405: 1, 410: 2, 413: 1, 429: 2, 500: 1, 503: 2])
        #expect(
            APNsRejection(.unregistered, timestamp: 5).body == Array(#"{"reason":"Unregistered","timestamp":5}"#.utf8))
    }
}
