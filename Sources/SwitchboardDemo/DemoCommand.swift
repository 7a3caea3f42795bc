import Foundation
import Synchronization
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardWire
import SwitchboardTesting
import SwitchboardCLI
import SwitchboardNetSim

/// `switchboard-dev demo`: the server, the push emulator and seven simulated phones in one process,
/// playing the calls users ask about first, with a timeline of who did what, which path woke
/// each phone, and the latencies.
public enum DemoCommand {
    public static let help = """
        Usage: switchboard-dev demo [--ring-timeout SECONDS] [--help]

        Starts the server (temporary SQLite database), the push emulator (TLS; APNs, FCM and
        Xiaomi) and seven simulated phones in one process, and plays eight scenarios with a
        timeline:
          1. a 1:1 call to a locked phone, answered
          2. the same user's second device stops ringing when the first answers
          3. a declined call
          4. a missed call after the ring timeout
          5. a busy callee
          6. a group call: one invitee declines, then joins late; the last leaver ends it
          7. Android: a Pixel woken over FCM answers; a Redmi (Xiaomi) phone woken over Xiaomi's own
             push misses the call and is left a "Missed call from …" notification
          8. sound through the built-in audio relay: a phrase spoken by espeak-ng goes from one
             phone to the other behind a good link, then a poor 4G one, and the mouth-to-ear
             delay, the frame loss and the SNR are printed (without espeak-ng and sox: a
             noise-like test sound)

        Phones: alice (app in the foreground), bob-iphone (background), bob-ipad (not running),
        carol (not running), dave (background), erin-pixel and frank-redmi (Android, app not
        running). A phone whose app is not running is launched in the background by the VoIP
        push, as iOS does; each timeline line says which path woke a phone: "push" or
        "event_stream" (on Android: the FCM data message or the maker's notification).

        Options:
          --ring-timeout SECONDS   how long a call rings before it is missed (default 6; 5-600)
          --help                   this text

        Exit status: 0 when every scenario ended as expected, 1 otherwise, 2 for bad options.
        Nothing is kept: the database and keys live in a temporary directory removed at the end.
        """

    public static func run(_ arguments: [String]) -> Int32 {
        var ringTimeout = 6
        var scanner = ArgumentScanner(arguments)
        while let flag = scanner.nextFlag() {
            switch flag {
            case "--help", "-h":
                print(help)
                return 0
            case "--ring-timeout":
                guard let text = try? scanner.value(for: flag), let value = Int(text), (5...600).contains(value) else {
                    FileHandle.standardError.write(
                        Data("switchboard-dev demo: --ring-timeout needs a number of seconds from 5 to 600\n".utf8))
                    return 2
                }
                ringTimeout = value
            default:
                FileHandle.standardError.write(
                    Data("switchboard-dev demo: unknown option '\(flag)' (see --help)\n".utf8))
                return 2
            }
        }
        let seconds = ringTimeout
        return waitForExitCode { await DemoRun.play(ringTimeout: seconds) }
    }
}

/// Runs `work` on the global executor and blocks this (command-line, non-async) thread until it
/// returns its exit status.
func waitForExitCode(_ work: @escaping @Sendable () async -> Int32) -> Int32 {
    let result = Mutex<Int32>(1)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let code = await work()
        result.withLock { $0 = code }
        done.signal()
    }
    done.wait()
    return result.withLock { $0 }
}

/// A scenario did not end as expected.
struct DemoFailure: Error, CustomStringConvertible {
    let description: String
}

/// Prints timeline lines as they happen, relative to the current scenario's start.
final class DemoPrinter: Sendable {
    private let scenarioStart = Mutex(Date())

    func startScenario(_ number: Int, _ title: String) {
        scenarioStart.withLock { $0 = Date() }
        write("\n── \(number). \(title) " + String(repeating: "─", count: max(0, 72 - title.count)) + "\n")
    }

    func timeline(_ entry: PhoneTimelineEntry) { line(phone: entry.phone, text: entry.text, at: entry.at) }

    func line(phone: String, text: String, at: Date) {
        let offset = at.timeIntervalSince(scenarioStart.withLock { $0 })
        let name = phone.count < 11 ? phone + String(repeating: " ", count: 11 - phone.count) : phone
        write(String(format: "  +%6.3fs  ", offset) + name + " " + text + "\n")
    }

    func say(_ text: String) { write("  \(text)\n") }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}

/// One run of the demo.
struct DemoRun {
    let stack: DemoStack
    let printer: DemoPrinter
    let alice: SimulatedPhone, bobPhone: SimulatedPhone, bobPad: SimulatedPhone, carol: SimulatedPhone,
        dave: SimulatedPhone
    let erin: AndroidPhone, frank: AndroidPhone
    let sessions: [String: AuthSession]
    let conversations: [String: String]
    let groupID: String
    let ringTimeout: Int

    static func play(ringTimeout: Int) async -> Int32 {
        let printer = DemoPrinter()
        printer.say("Starting the server, the push emulator and seven phones…")
        var options = DemoStack.Options()
        options.ringTimeoutSeconds = ringTimeout
        let stack: DemoStack
        do {
            stack = try await DemoStack(options: options)
        } catch {
            FileHandle.standardError.write(Data("switchboard-dev demo: cannot start: \(error)\n".utf8))
            return 1
        }
        var code: Int32 = 0
        var phones: [SimulatedPhone] = []
        var androids: [AndroidPhone] = []
        do {
            let run = try await DemoRun.setUp(stack: stack, printer: printer, ringTimeout: ringTimeout)
            phones = [run.alice, run.bobPhone, run.bobPad, run.carol, run.dave]
            androids = [run.erin, run.frank]
            printer.say(
                "server http://\(stack.server.address), push emulator https://localhost:\(stack.emulator.address?.port ?? 0)"
            )
            try await run.all()
            printer.say("\nAll eight scenarios ended as expected.")
        } catch {
            printer.say("\nFAILED: \(error)")
            code = 1
        }
        for phone in phones { phone.shutDown() }
        for phone in androids { phone.shutDown() }
        await stack.shutDown()
        return code
    }

    static func setUp(stack: DemoStack, printer: DemoPrinter, ringTimeout: Int) async throws -> DemoRun {
        var sessions: [String: AuthSession] = [:]
        for name in ["alice", "bob", "carol", "dave", "erin", "frank"] {
            sessions[name] = try await stack.register(name, displayName: name.capitalized)
        }
        let s = sessions.mapValues { $0 }
        var conversations: [String: String] = [:]
        for (a, b) in [
            ("alice", "bob"), ("alice", "carol"), ("alice", "dave"), ("dave", "bob"), ("dave", "carol"),
            ("alice", "erin"), ("alice", "frank"),
        ] {
            conversations["\(a)-\(b)"] = try await stack.befriend(s[a]!, s[b]!)
        }
        let group = try await stack.client(s["alice"]!).createGroup(
            name: "Team", memberIDs: ["bob", "carol", "dave"].map { s[$0]!.user.id })
        let log: @Sendable (PhoneTimelineEntry) -> Void = { printer.timeline($0) }
        let alice = stack.phone("alice", of: s["alice"]!, onTimeline: log)
        let bobPhone = stack.phone("bob-iphone", of: s["bob"]!, onTimeline: log)
        let bobPad = stack.phone("bob-ipad", of: s["bob"]!, onTimeline: log)
        let carol = stack.phone("carol", of: s["carol"]!, onTimeline: log)
        let dave = stack.phone("dave", of: s["dave"]!, onTimeline: log)
        for phone in [alice, bobPhone, bobPad, carol, dave] {
            try await phone.registerForPushes()
            phone.startReceivingPushes()
        }
        await alice.bringToForeground()
        bobPhone.sendToBackground()
        dave.sendToBackground()
        let say: @Sendable (String, String, Date) -> Void = { printer.line(phone: $0, text: $1, at: $2) }
        let erin = AndroidPhone(
            "erin-pixel", maker: "fcm", client: stack.client(s["erin"]!), emulator: stack.emulator, say: say)
        let frank = AndroidPhone(
            "frank-redmi", maker: "xiaomi", client: stack.client(s["frank"]!), emulator: stack.emulator, say: say)
        for phone in [erin, frank] { try await phone.register() }
        return DemoRun(
            stack: stack, printer: printer, alice: alice, bobPhone: bobPhone, bobPad: bobPad, carol: carol, dave: dave,
            erin: erin, frank: frank,
            sessions: sessions, conversations: conversations, groupID: group.id, ringTimeout: ringTimeout)
    }

    func all() async throws {
        try await scenario(1, "A 1:1 call to a locked phone, answered") { try await lockedPhoneAnswers() }
        try await scenario(2, "Bob's second device stops ringing when the first answers") {
            try await secondDeviceStops()
        }
        try await scenario(3, "A declined call") { try await declined() }
        try await scenario(4, "A missed call after the ring timeout (\(ringTimeout) s)") { try await missed() }
        try await scenario(5, "A busy callee") { try await busy() }
        try await scenario(6, "A group call: carol declines, then joins late; the last leaver ends it") {
            try await groupCall()
        }
        try await scenario(7, "Android: a Pixel over FCM answers; a Xiaomi phone misses the call") {
            try await androidPhones()
        }
        try await scenario(8, "Sound through the built-in audio relay, on a good link and on poor 4G") {
            try await soundThroughTheRelay()
        }
    }

    /// Real audio: a spoken phrase from one phone to another through the relay, each phone
    /// behind its own impaired link, with what arrived measured against what was said.
    func soundThroughTheRelay() async throws {
        let phrase = "The phone rings, even locked, on a bad network, and the call connects."
        let mouth: [Float], sound: String
        do {
            mouth = try AudioProbe.spoken(phrase)
            sound = "speech"
        } catch {
            printer.say(
                "  (espeak-ng or sox is missing: a noise-like test sound instead; apt-get install espeak-ng sox)")
            mouth = AudioAnalysis.pseudoSpeech(seconds: 3)
            sound = "test sound"
        }
        printer.say("  \"\(phrase)\"")
        for profile in [NetworkProfile.good, .poor4G] {
            var report = try await AudioProbe.run(stack: stack, profile: profile, sound: sound, mouth: mouth)
            printer.say("  audio \(report.line)")
            // The figures are shown; what is judged is only a broken path (most of the sound must
            // arrive intact), checked again in lockstep when real time fell short on this machine.
            // `switchboard-dev bench audio` measures delay, loss and speech quality.
            if !report.pathIntact {
                report = try await AudioProbe.run(
                    stack: stack, profile: profile, sound: sound, mouth: mouth, pacing: .lockstep)
                printer.say("  audio \(report.line)")
            }
            guard report.pathIntact else {
                throw DemoFailure(description: "the audio did not come through: \(report.line)")
            }
        }
    }

    // MARK: Scenarios

    func lockedPhoneAnswers() async throws {
        let (callID, dialed) = try await dial(alice, "alice-carol", handle: "Carol")
        try await until("carol rings") { carol.systemCall(callID)?.state == .ringing }
        reportWake(carol, callID, since: dialed)
        try await pause(1)
        try carol.answer(callID)
        let answered = Date()
        try await until("both connected") { connected(alice, callID) && connected(carol, callID) }
        printer.say("→ answer to both connected: \(ms(Date().timeIntervalSince(answered)))")
        try await pause(1.5)
        try alice.hangUp(callID)
        try await until("carol's call ends") { carol.systemCall(callID)?.state == .ended }
        try expect(carol.systemCall(callID)?.endReason == .remoteEnded, "carol's call ended as remote ended")
    }

    func secondDeviceStops() async throws {
        let (callID, dialed) = try await dial(alice, "alice-bob", handle: "Bob")
        try await until("both of bob's devices ring") {
            bobPhone.systemCall(callID)?.state == .ringing && bobPad.systemCall(callID)?.state == .ringing
        }
        reportWake(bobPhone, callID, since: dialed)
        reportWake(bobPad, callID, since: dialed)
        try await pause(1)
        try bobPhone.answer(callID)
        let answered = Date()
        try await until("bob-ipad stops ringing") { bobPad.systemCall(callID)?.state == .ended }
        try expect(bobPad.systemCall(callID)?.endReason == .answeredElsewhere, "bob-ipad ended as answered elsewhere")
        printer.say("→ bob-ipad stopped ringing \(ms(Date().timeIntervalSince(answered))) after bob-iphone answered")
        try await until("both connected") { connected(alice, callID) && connected(bobPhone, callID) }
        try await pause(1)
        try bobPhone.hangUp(callID)
        try await until("alice's call ends") { alice.systemCall(callID)?.state == .ended }
        try expect(alice.systemCall(callID)?.endReason == .remoteEnded, "alice's call ended as remote ended")
    }

    func declined() async throws {
        let (callID, dialed) = try await dial(alice, "alice-dave", handle: "Dave")
        try await until("dave rings") { dave.systemCall(callID)?.state == .ringing }
        reportWake(dave, callID, since: dialed)
        try await pause(1)
        try dave.hangUp(callID)
        try await until("alice's call ends") { alice.systemCall(callID)?.state == .ended }
        let server = try await stack.client(sessions["alice"]!).call(callID)
        try expect(server.endReason == .declined, "the server ended the call as declined")
        printer.say(
            "→ server: ended, \(server.endReason?.rawValue ?? "?"); alice's call system: \(alice.systemCall(callID)?.endReason.map { "\($0)" } ?? "?")"
        )
    }

    func missed() async throws {
        let (callID, dialed) = try await dial(alice, "alice-carol", handle: "Carol")
        try await until("carol rings") { carol.systemCall(callID)?.state == .ringing }
        reportWake(carol, callID, since: dialed)
        printer.say("(nobody answers…)")
        try await until("the ring timeout", seconds: Double(ringTimeout) + 10) {
            carol.systemCall(callID)?.state == .ended && alice.systemCall(callID)?.state == .ended
        }
        try expect(carol.systemCall(callID)?.endReason == .unanswered, "carol's call ended as unanswered")
        try expect(alice.systemCall(callID)?.endReason == .unanswered, "alice's call ended as unanswered")
    }

    func busy() async throws {
        let (callID, _) = try await dial(alice, "alice-bob", handle: "Bob")
        try await until("bob rings") { bobPhone.systemCall(callID)?.state == .ringing }
        try bobPhone.answer(callID)
        try await until("alice and bob connected") { connected(alice, callID) && connected(bobPhone, callID) }
        printer.say("(dave calls bob while bob talks to alice)")
        let (busyID, _) = try await dial(dave, "dave-bob", handle: "Bob")
        try await until("dave's call ends") { dave.coordinator?.call(busyID)?.stage == .ended }
        let server = try await stack.client(sessions["dave"]!).call(busyID)
        try expect(server.endReason == .busy, "the server ended dave's call as busy")
        try expect(
            bobPhone.systemCall(busyID) == nil && bobPad.systemCall(busyID) == nil,
            "bob's devices never rang for dave's call")
        printer.say("→ dave's call: \(server.endReason?.rawValue ?? "?"); bob's call with alice goes on")
        try await pause(1)
        try alice.hangUp(callID)
        try await until("bob's call ends") { bobPhone.systemCall(callID)?.state == .ended }
    }

    func groupCall() async throws {
        let (callID, dialed) = try await dial(alice, nil, handle: "Team")
        try await until("the group rings") {
            [bobPhone, bobPad, carol, dave].allSatisfy { $0.systemCall(callID)?.state == .ringing }
        }
        for phone in [bobPhone, bobPad, carol, dave] { reportWake(phone, callID, since: dialed) }
        try await pause(1)
        try bobPhone.answer(callID)
        try await until("alice and bob connected") { connected(alice, callID) && connected(bobPhone, callID) }
        try await pause(0.5)
        printer.say("(carol declines for now…)")
        try carol.hangUp(callID)
        try await until("carol's phone stops ringing") { carol.systemCall(callID)?.state == .ended }
        try await pause(1.5)
        printer.say("(…and joins late from the app)")
        try await carol.join(callID, handle: "Team")
        try await until("carol connected") { connected(carol, callID) }
        try await until("dave's ring timeout", seconds: Double(ringTimeout) + 10) {
            dave.systemCall(callID)?.state == .ended
        }
        try expect(dave.systemCall(callID)?.endReason == .unanswered, "dave's call ended as unanswered")
        try bobPhone.hangUp(callID)
        try await pause(0.5)
        try alice.hangUp(callID)
        try await pause(0.5)
        let ongoing = try await stack.client(sessions["carol"]!).call(callID)
        try expect(ongoing.state == .active, "the call goes on while carol is in it")
        try carol.hangUp(callID)
        try await until("the server ends the call") {
            carol.systemCall(callID)?.state == .ended
        }
        // Her leave reaches the server a moment after her call system ended the call: read until
        // the server shows the outcome (at most 5 s).
        var server = try await stack.client(sessions["carol"]!).call(callID)
        for _ in 0..<50 where server.state != .ended {
            try await Task.sleep(nanoseconds: 100_000_000)
            server = try await stack.client(sessions["carol"]!).call(callID)
        }
        try expect(
            server.state == .ended && server.endReason == .completed, "the last leaver ended the call (completed)")
        printer.say("→ server: \(server.state), \(server.endReason?.rawValue ?? "?") when carol, the last one, left")
    }

    func androidPhones() async throws {
        let (callID, dialed) = try await dial(alice, "alice-erin", handle: "Erin")
        try await until("erin-pixel rings") { erin.shown(callID) == .ringing }
        reportWake(erin, callID, since: dialed)
        try await pause(1)
        try await erin.answer(callID)
        try await until("alice connected") { connected(alice, callID) }
        try await pause(1)
        try alice.hangUp(callID)
        try await until("alice's call ends") { alice.systemCall(callID)?.state == .ended }
        // Her leave reaches the server a moment after her call system ended the call; her next
        // dial waits for it (otherwise: 409 CALL_BUSY, she is still in this call). At most 10 s.
        var server = try await stack.client(sessions["alice"]!).call(callID)
        for _ in 0..<100 where server.state != .ended {
            try await Task.sleep(nanoseconds: 100_000_000)
            server = try await stack.client(sessions["alice"]!).call(callID)
        }
        try expect(server.state == .ended, "the server ended alice's call with erin")

        let (missedID, dialedAgain) = try await dial(alice, "alice-frank", handle: "Frank")
        try await until("frank-redmi rings") { frank.shown(missedID) == .ringing }
        reportWake(frank, missedID, since: dialedAgain)
        printer.say("(nobody answers…)")
        try await until("the missed-call notice", seconds: Double(ringTimeout) + 10) {
            if case .missed = frank.shown(missedID) { return true }
            return false
        }
        try expect(
            frank.shown(missedID) == .missed(text: "Missed call from Alice"),
            "frank-redmi shows \"Missed call from Alice\"")
        try await until("alice's call ends") { alice.systemCall(missedID)?.state == .ended }
        try expect(alice.systemCall(missedID)?.endReason == .unanswered, "alice's call ended as unanswered")
    }

    func reportWake(_ phone: AndroidPhone, _ callID: String, since: Date) {
        guard let at = phone.wokenAt(callID) else { return }
        let path = phone.maker == "fcm" ? "FCM" : "\(phone.maker) push"
        printer.say("→ \(phone.name) woken by \(path) \(ms(at.timeIntervalSince(since))) after the dial")
    }

    // MARK: Helpers

    func scenario(_ number: Int, _ title: String, _ body: () async throws -> Void) async throws {
        printer.startScenario(number, title)
        try await body()
        try await until("every phone is idle") {
            [alice, bobPhone, bobPad, carol, dave].allSatisfy { $0.coordinator?.liveCallIDs.isEmpty ?? true }
        }
        for phone in [alice, bobPhone, bobPad, carol, dave] {
            if let violations = phone.callSystem?.violations, !violations.isEmpty {
                throw DemoFailure(description: "\(phone.name) broke the CallKit contract: \(violations)")
            }
        }
        printer.say("✓ scenario \(number) ended as expected")
    }

    func dial(_ phone: SimulatedPhone, _ conversation: String?, handle: String) async throws -> (String, Date) {
        let started = Date()
        let callID: String
        if let conversation {
            callID = try await phone.dial(
                scopeKind: .conversation, scopeID: conversations[conversation]!, handle: handle)
        } else {
            callID = try await phone.dial(scopeKind: .group, scopeID: groupID, handle: handle)
        }
        return (callID, started)
    }

    func reportWake(_ phone: SimulatedPhone, _ callID: String, since: Date) {
        var path = "?"
        let at = phone.notices.first { timed in
            if case .incoming(let id, let origin) = timed.notice, id == callID {
                path = origin.rawValue
                return true
            }
            return false
        }?.at
        guard let at else { return }
        printer.say("→ \(phone.name) woken by \(path) \(ms(at.timeIntervalSince(since))) after the dial")
    }

    func connected(_ phone: SimulatedPhone, _ callID: String) -> Bool {
        phone.coordinator?.call(callID)?.stage == .active
    }

    func until(_ what: String, seconds: Double = 10, _ condition: () -> Bool) async throws {
        guard await eventually(seconds: seconds, condition) else {
            throw DemoFailure(description: "timed out waiting for: \(what)")
        }
    }

    func pause(_ seconds: Double) async throws { try await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000)) }

    func expect(_ condition: Bool, _ what: String) throws {
        guard condition else { throw DemoFailure(description: "expected: \(what)") }
    }

    func ms(_ seconds: Double) -> String { String(format: "%.0f ms", seconds * 1000) }
}
