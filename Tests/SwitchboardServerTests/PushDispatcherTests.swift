import Foundation
import Synchronization
import Testing
@testable import SwitchboardPush
@testable import SwitchboardServer
import SwitchboardTesting
import SwitchboardObservability
import SwitchboardPushCore

/// A provider that holds the answers for some tokens until released, and answers the others
/// from a script (200 when it runs out).
final class HoldingPushProvider: PushTransport {
    private struct State {
        var held: Set<String> = []
        /// Held as the HTTP/2 client holds a request through an outage: handed back unsent.
        var heldBack: Set<String> = []
        /// Handed back unsent at once, every time (a connection that does not come back).
        var alwaysHandedBack: Set<String> = []
        var waiting: [(token: String, continuation: CheckedContinuation<PushSendResult, Never>)] = []
        var script: [String: [PushSendResult]] = [:]
        var sent: [String] = []
    }

    private let state = Mutex(State())
    var name: String { "apns" }

    func hold(_ token: String) { state.withLock { _ = $0.held.insert(token) } }
    /// The next send for `token` waits as one held for a connection does, and on release is
    /// handed back unsent (its attempt's ``RequestWindow`` says so).
    func holdBack(_ token: String) { state.withLock { _ = $0.heldBack.insert(token) } }
    func handBackAlways(_ token: String) { state.withLock { _ = $0.alwaysHandedBack.insert(token) } }
    func script(_ token: String, _ results: [PushSendResult]) { state.withLock { $0.script[token] = results } }
    var sent: [String] { state.withLock { $0.sent } }
    var heldRequests: Int { state.withLock { $0.waiting.count } }

    /// Answers every held request with 200 (one held back: unsent) and stops holding.
    func releaseAll() {
        let (waiting, heldBack) = state.withLock { state in
            defer {
                state.waiting.removeAll()
                state.held.removeAll()
                state.heldBack.removeAll()
            }
            return (state.waiting, state.heldBack)
        }
        for entry in waiting {
            entry.continuation.resume(
                returning: heldBack.contains(entry.token)
                    ? .transportFailure("held_for_connection") : .response(status: 200, reason: nil))
        }
    }

    func send(_ job: PushJob) async -> PushSendResult {
        if state.withLock({ state in
            guard state.alwaysHandedBack.contains(job.token) else { return false }
            state.sent.append(job.token)
            return true
        }) {
            RequestWindow.current?.noteHeldBack()
            return .transportFailure("held_for_connection")
        }
        if state.withLock({ $0.heldBack.contains(job.token) }) { RequestWindow.current?.noteHeldBack() }
        return await withCheckedContinuation { continuation in
            let answer = state.withLock { state -> PushSendResult? in
                state.sent.append(job.token)
                if state.held.contains(job.token) || state.heldBack.contains(job.token) {
                    state.waiting.append((job.token, continuation))
                    return nil
                }
                guard var queue = state.script[job.token], !queue.isEmpty else {
                    return .response(status: 200, reason: nil)
                }
                let next = queue.removeFirst()
                state.script[job.token] = queue
                return next
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }
}

private func token(_ byte: String) -> String { String(repeating: byte, count: 32) }

@Suite("Push dispatcher: idle passes and no head-of-line blocking", .timeLimit(.minutes(3)))
struct PushDispatcherTests {
    private struct World {
        let world: CallWorld
        let provider: HoldingPushProvider
        var app: TestApplication { world.app }
        var dispatcher: PushDispatcher { world.app.application.dispatcher }

        init() throws {
            let provider = HoldingPushProvider()
            self.provider = provider
            var configuration = ServerConfiguration()
            configuration.push.apns.bundleID = "com.example.phone"
            configuration.adminKey = "admin-key-0123456789"
            world = try CallWorld(configuration: configuration, apnsTransport: provider)
        }

        func register(_ person: CallWorld.Person, token: String) async {
            _ = await app.request(
                "POST", "/voip/devices", headers: person.headers,
                body: #"{"deviceId":"\#(UUID().uuidString)","pushToken":"\#(token)","environment":"production"}"#)
        }

        func job(_ token: String) async throws -> (state: String, attempts: Int)? {
            try await app.application.store.read { connection in
                try connection.query(
                    "SELECT state, attempts FROM push_jobs WHERE token = ? ORDER BY created_at_ms DESC LIMIT 1",
                    [.text(token)]
                )
                .first.map { (try $0.string("state"), try $0.int("attempts")) }
            }
        }

        /// The dispatcher has nothing to do but wait for held answers, and sleeps on the manual clock.
        func dispatcherAsleep() async throws -> Bool {
            try await eventuallyTrying {
                dispatcher.inFlightCount == provider.heldRequests
                    && world.clock.sleeperCount(of: PushDispatcher.loopName) >= 1
            }
        }
    }

    @Test func anIdleDispatcherAfterARingMakesABoundedNumberOfPasses() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        await env.register(bob, token: token("ab"))
        let call = try #require(await env.world.call(alice, "conversation", conversation).call)
        #expect(try await eventuallyTrying { try await env.job(token("ab"))?.state == "delivered" })
        #expect(await env.world.act("cancel", call.id, by: alice).status == 200)
        #expect(try await env.dispatcherAsleep())

        // With the clock standing still nothing is due: no pass at all, however long we wait.
        // (The dispatcher that spun after its first early wake made thousands here.)
        let resting = env.dispatcher.passCount
        try await Task.sleep(for: .milliseconds(500))
        #expect(env.dispatcher.passCount - resting <= 1)

        // An idle hour: one pass per wake of its idle ceiling at most.
        let before = env.dispatcher.passCount
        let steps = 60
        for _ in 0..<steps {
            env.world.clock.advance(seconds: 60)
            #expect(try await env.dispatcherAsleep())
        }
        let passes = env.dispatcher.passCount - before
        #expect(passes >= 1 && passes <= 2 * steps, "an idle hour took \(passes) passes")
    }

    /// A ring to users without a device writes no job, so it does not wake the dispatcher for a
    /// pass (a read per call, for nothing); a ring with a device still does.
    @Test func aRingWithoutAnyDeviceCostsTheDispatcherNoPass() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        #expect(try await env.dispatcherAsleep())
        let resting = env.dispatcher.passCount
        for _ in 0..<5 {
            let call = try #require(await env.world.call(alice, "conversation", conversation).call)
            #expect(await env.world.act("cancel", call.id, by: alice).status == 200)
        }
        #expect(try await env.dispatcherAsleep())
        #expect(env.dispatcher.passCount == resting, "the clock stands still and no job was written")

        await env.register(bob, token: token("ab"))
        _ = try #require(await env.world.call(alice, "conversation", conversation).call)
        #expect(try await eventuallyTrying { try await env.job(token("ab"))?.state == "delivered" })
        #expect(env.dispatcher.passCount > resting)
    }

    @Test func oneHungTokenDelaysNoOtherPush() async throws {
        let env = try World()
        defer {
            env.provider.releaseAll()
            env.world.close()
        }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let carol = try await env.world.person("carol"), dave = try await env.world.person("dave")
        let toBob = try await env.world.befriend(alice, bob)
        let toCarol = try await env.world.befriend(dave, carol)
        let hung = token("ab"), second = token("cd"), carols = token("ef"), retried = token("12")
        env.provider.hold(hung)
        await env.register(bob, token: hung)
        await env.register(bob, token: second)
        await env.register(carol, token: carols)
        // Bob's two devices ring together: the hung one must not hold back the other.
        _ = try #require(await env.world.call(alice, "conversation", toBob).call)
        #expect(try await eventuallyTrying { try await env.job(second)?.state == "delivered" })
        #expect(
            await eventually { env.provider.heldRequests == 1 },
            "the hung request is out (its task may reach the provider after the other finished)")

        // A brand-new ring while the hung request is still open goes out at once.
        _ = try #require(await env.world.call(dave, "conversation", toCarol).call)
        #expect(try await eventuallyTrying { try await env.job(carols)?.state == "delivered" })

        // A 500 for another token is retried on its own schedule, min(2^0, 8) s + up to 0.5 s
        // of jitter (0.25 s here): not at 1.2 s, and by 1.3 s although the hung request still waits.
        let erin = try await env.world.person("erin"), frank = try await env.world.person("frank")
        let toFrank = try await env.world.befriend(erin, frank)
        await env.register(frank, token: retried)
        env.provider.script(retried, [.response(status: 500, reason: "InternalServerError")])
        _ = try #require(await env.world.call(erin, "conversation", toFrank).call)
        #expect(try await eventuallyTrying { try await env.job(retried)?.attempts == 1 })
        #expect(try await env.dispatcherAsleep())
        env.world.clock.advance(seconds: 1.2)
        #expect(try await env.dispatcherAsleep())
        #expect(try await env.job(retried)?.state == "pending")
        env.world.clock.advance(seconds: 0.1)
        #expect(try await eventuallyTrying { try await env.job(retried)?.state == "delivered" })
        #expect(env.provider.heldRequests == 1, "the hung request is still held")
        #expect(try await env.job(hung)?.state == "pending")

        // The hung request's answer still counts when it comes.
        env.provider.releaseAll()
        #expect(try await eventuallyTrying { try await env.job(hung)?.state == "delivered" })
    }

    /// A TLS mistake toward APNs (the emulator's CA left out): every attempt fails the same way
    /// for the whole ring window. It is logged at once, once, and the expired job is listed
    /// among the newest failures with the error, not hidden behind `expired`.
    /// A send held for a connection comes back unsent (the APNs connection was down): the
    /// dispatcher asks again whether the call rings before sending. Cancelled meanwhile, the
    /// ring is dropped, never sent; still ringing, it goes out at once.
    @Test func aSendHandedBackUnsentIsCheckedAgainBeforeItGoesOut() async throws {
        let env = try World()
        defer {
            env.provider.releaseAll()
            env.world.close()
        }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let carol = try await env.world.person("carol"), dave = try await env.world.person("dave")
        let toBob = try await env.world.befriend(alice, bob), toCarol = try await env.world.befriend(dave, carol)
        let bobs = token("ab"), carols = token("cd")
        env.provider.holdBack(bobs)
        env.provider.holdBack(carols)
        await env.register(bob, token: bobs)
        await env.register(carol, token: carols)
        let cancelled = try #require(await env.world.call(alice, "conversation", toBob).call)
        _ = try #require(await env.world.call(dave, "conversation", toCarol).call)
        #expect(await eventually { env.provider.heldRequests == 2 })
        // Bob's call is cancelled while his push waits for the connection.
        #expect(await env.world.act("cancel", cancelled.id, by: alice).status == 200)
        env.provider.releaseAll()

        #expect(try await eventuallyTrying { try await env.job(bobs)?.state == "dropped" })
        #expect(try await eventuallyTrying { try await env.job(carols)?.state == "delivered" })
        let sent = env.provider.sent
        #expect(sent.filter { $0 == bobs }.count == 1, "the cancelled call's ring was never sent again")
        #expect(sent.filter { $0 == carols }.count == 2, "the ringing call's was sent again at once")
        #expect(try await env.job(carols)?.attempts == 1, "one attempt: the handed-back send was no attempt")
    }

    /// A send handed back unsent every time (the connection does not come back) is looked at
    /// again three times in one claim, then retried later; it counts as no attempt, since its
    /// device was never rung.
    @Test func sendsHandedBackEveryTimeAreRetriedWithoutCountingAnAttempt() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        let bobs = token("ab")
        env.provider.handBackAlways(bobs)
        await env.register(bob, token: bobs)
        _ = try #require(await env.world.call(alice, "conversation", conversation).call)
        #expect(await eventually { env.provider.sent.filter { $0 == bobs }.count == PushDispatcher.maxLooksAgain })
        #expect(try await env.dispatcherAsleep())
        let job = try await env.job(bobs)
        #expect(job?.state == "pending" && job?.attempts == 0, "\(String(describing: job))")
    }

    @Test func aTransportFailureIsLoggedOnceAndTheExpiredJobIsListedWithItsError() async throws {
        let env = try World()
        defer { env.world.close() }
        let alice = try await env.world.person("alice"), bob = try await env.world.person("bob")
        let conversation = try await env.world.befriend(alice, bob)
        let failing = token("5a")
        let tls = "connection_failed: SSL certificate problem: self-signed certificate"
        env.provider.script(failing, Array(repeating: .transportFailure(tls), count: 50))
        await env.register(bob, token: failing)
        _ = try #require(await env.world.call(alice, "conversation", conversation).call)
        #expect(try await eventuallyTrying { try await env.job(failing)?.attempts == 1 })
        // Retries every min(2^n, 8) s + jitter until the 45 s ring window has passed.
        var steps = 0
        while try await env.job(failing)?.state == "pending", steps < 30 {
            #expect(try await env.dispatcherAsleep())
            env.world.clock.advance(seconds: 9)
            steps += 1
        }
        // It ends expired (the ring window passed) or dropped (the ring-timeout sweep ended the
        // call first, on the same clock); either way undelivered after the same error.
        let job = try #require(try await env.job(failing))
        #expect(["expired", "dropped"].contains(job.state) && job.attempts >= 4, "\(job)")

        let lines = env.app.sink.recorded.filter { $0.contains("push transport failure") }
        #expect(lines.count == 1, "\(lines)")
        #expect(lines.first?.contains(tls) == true && lines.first?.contains("\"level\":\"warning\"") == true)

        let status = await env.app.request(
            "GET", "/admin/push/status", headers: ["Host": "t", "Authorization": "Bearer admin-key-0123456789"])
        let failures = try #require(status.json?["newestFailures"] as? [[String: Any]])
        #expect(failures.count == 1)
        #expect(failures.first?["state"] as? String == job.state)
        #expect(failures.first?["lastError"] as? String == tls)
        #expect(failures.first?["tokenSuffix"] as? String == "5a5a5a5a")
    }

    @Test func theStartUpLineNamesThePushChannel() {
        let sink = RecordingLogSink()
        APNsVoIPChannel(unconfiguredFor: "a").summary.log(to: Logger(level: .info, sink: sink))
        #expect(sink.recorded.first?.contains("push channel not configured") == true)
        #expect(sink.recorded.first?.contains("\"level\":\"warning\"") == true)
        #expect(sink.recorded.first?.contains(#""channel":"ios-voip""#) == true)
        #expect(
            sink.recorded.first?.contains("apnsKeyFile") == true,
            "the warning names the settings that configure the channel")
        PushChannelSummary(
            channel: "ios-voip", provider: "apns", configured: true, auth: "token (team T, key K), topic a.voip",
            endpoints: "production https://localhost:2197, sandbox https://localhost:2197", caFile: "/tmp/ca.pem",
            hint: ""
        ).log(to: Logger(level: .info, sink: sink))
        #expect(
            sink.recorded.last?.contains(
                #""endpoints":"production https://localhost:2197, sandbox https://localhost:2197""#) == true)
        #expect(sink.recorded.last?.contains(#""caFile":"/tmp/ca.pem""#) == true)
    }

    @Test func aTimeoutOrACancelledWaitLeavesNoSignalBehind() async throws {
        let signal = WakeSignal()
        // A signal before the wait is remembered.
        signal.signal()
        #expect(await signal.wait(sleep: { try await Task.sleep(for: .seconds(3600)) }) == .signalled)
        // A wait whose sleep ends times out, and leaves nothing for the next wait.
        #expect(await signal.wait(sleep: {}) == .timedOut)
        let next = Task { await signal.wait(sleep: { try await Task.sleep(for: .seconds(3600)) }) }
        try await Task.sleep(for: .milliseconds(100))
        signal.signal()
        #expect(try await value(of: next) == .signalled)
        // A cancelled wait ends as cancelled and leaves nothing either.
        let cancelled = Task { await signal.wait(sleep: { try await Task.sleep(for: .seconds(3600)) }) }
        cancelled.cancel()
        #expect(try await value(of: cancelled) == .cancelled)
        #expect(await signal.wait(sleep: {}) == .timedOut)
    }

    @Test func theAPNsRequestDeadlineIsASetting() throws {
        #expect(ServerConfiguration().push.apns.connection.requestTimeoutSeconds == 10)
        let set = try ServerConfiguration.resolve(
            flags: [:], environment: ["SWITCHBOARD_APNS_REQUEST_TIMEOUT_SECONDS": "3"], file: nil)
        #expect(set.push.apns.connection.requestTimeoutSeconds == 3)
        #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.resolve(
                flags: [:], environment: ["SWITCHBOARD_APNS_REQUEST_TIMEOUT_SECONDS": "0"], file: nil)
        }
    }
}
