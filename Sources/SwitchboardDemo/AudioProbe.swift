import Foundation
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardNetSim
import SwitchboardTesting
import SwitchboardWire

/// Real sound through a real call: two simulated phones, each a `RelayMediaSession` behind its
/// own impaired link (the weak-network proxy), talk through the server's built-in relay, and
/// what one says is compared with what the other hears.
public enum AudioProbe {
    /// What one direction of a call did to sound.
    public struct Report: Sendable, Equatable {
        public var profile: String
        public var sound: String
        /// From the sender's microphone to the receiver's speaker.
        public var delayMilliseconds: Double
        /// Frames the sender sent that never played (lost on the way or dropped to stay shallow),
        /// in percent.
        public var frameLossPercent: Double
        /// Gaps the receiver's jitter buffer concealed (the silence after the sound included).
        public var concealed: Int
        /// What arrived against what the 8 kHz band lets through, once lined up (see
        /// `AudioAnalysis.Comparison`): over the whole sound, and the median of its 20 ms pieces.
        public var snr: Double
        public var medianSegmentSNR: Double
        public var framesSent: Int
        /// Whether the sound's start was found within the delays searched.
        public var found: Bool
        public var pacing: Pacing
        /// Real time only: 20 ms steps the driver began more than 10 ms late (a starved machine).
        public var lateSteps: Int
        public var steps: Int

        /// Whether the machine kept the 20 ms schedule well enough for the figures of time and
        /// loss to be the network's and the relay's (at most 5 % of the steps late).
        public var scheduleKept: Bool { pacing == .lockstep || lateSteps * 20 <= steps }

        /// What lockstep can prove on any machine: the sound was found, and most of its 20 ms
        /// pieces arrived intact through the 8 kHz path (the median piece above 20 dB SNR).
        /// Delay, loss and speech quality are figures of real time, measured by
        /// `switchboard-dev bench audio`, never judged here.
        public var pathIntact: Bool { found && medianSegmentSNR > 20 }

        /// One line for a person.
        public var line: String {
            String(
                format:
                    "%@ %@: mouth to ear %@, frame loss %.1f %% of %d frames, SNR %.1f dB (median of its 20 ms pieces %.1f dB)%@",
                profile, sound,
                found && frameLossPercent <= 50 ? String(format: "%.0f ms", delayMilliseconds) : "n/a (not heard)",
                frameLossPercent, framesSent, snr, medianSegmentSNR,
                pacing == .lockstep
                    ? " [lockstep: the path checked, no figure of time or loss]"
                    : scheduleKept
                        ? "" : " [the machine fell behind the 20 ms schedule in \(lateSteps) of \(steps) steps]")
        }
    }

    /// The longest initial delay the comparison searches (500 ms at 48 kHz); a delay found at
    /// its edge means the sound was not found at all.
    public static let maxLag = 24_000

    /// A phrase spoken by espeak-ng and converted by sox to 48 kHz mono Float (Debian's
    /// `espeak-ng` and `sox`).
    public static func spoken(_ text: String) throws -> [Float] {
        let directory = NSTemporaryDirectory() + "switchboard-speech-" + UUID().uuidString.lowercased()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let wave = directory + "/phrase.wav", raw = directory + "/phrase.f32"
        try run("/usr/bin/espeak-ng", ["-v", "en", "-s", "150", "-w", wave, text])
        try run("/usr/bin/sox", [wave, "-r", "48000", "-c", "1", "-b", "32", "-e", "floating-point", "-t", "raw", raw])
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    private static func run(_ executable: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try ProcessLauncher.run(process)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ProbeError(
                "\(executable) exited with \(process.terminationStatus) (install Debian's espeak-ng and sox)")
        }
    }

    struct ProbeError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Calls from a new Alice to a new Bob on `stack`, each phone on its own link with
    /// `profile`, and plays `mouth` (48 kHz) into Alice's microphone in real time, 20 ms at a
    /// time, while Bob's speaker is read at the same pace; then hangs up.
    /// How the two phones' audio is driven.
    public enum Pacing: String, Sendable {
        /// A frame every 20 ms of the wall clock, as an audio engine does: the real figures, as
        /// long as the machine keeps the schedule (`Report.lateSteps` says when it did not).
        case realTime = "real time"
        /// Each 20 ms step waits (boundedly) until at most 3 of Alice's frames are still on their
        /// way to Bob: what a starved machine can still check (that the sound arrives intact and
        /// in order), with no figure of time worth reading.
        case lockstep
    }

    /// A report and the two signals it compares (48 kHz): what was said and what was heard.
    public struct Recording: Sendable {
        public var report: Report
        public var mouth: [Float]
        public var ear: [Float]
    }

    public static func run(
        stack: DemoStack, profile: NetworkProfile, sound: String, mouth: [Float], pacing: Pacing = .realTime,
        seed: UInt64 = 7
    ) async throws -> Report {
        try await record(stack: stack, profile: profile, sound: sound, mouth: mouth, pacing: pacing, seed: seed).report
    }

    /// ``run(stack:profile:sound:mouth:pacing:seed:)``, keeping what the ear heard.
    public static func record(
        stack: DemoStack, profile: NetworkProfile, sound: String, mouth: [Float], pacing: Pacing = .realTime,
        seed: UInt64 = 7
    ) async throws -> Recording {
        let suffix = String(UUID().uuidString.prefix(6)).lowercased()
        let alice = try await stack.register("alice\(suffix)"), bob = try await stack.register("bob\(suffix)")
        let conversation = try await stack.befriend(alice, bob)
        let server = stack.server.address.split(separator: ":")
        let upstream = IPv4Endpoint(host: String(server[0]), port: Int(server[1]) ?? 0)
        let aliceLink = ImpairmentProxy(
            configuration: ImpairmentProxyConfiguration(upstream: upstream, profile: profile, seed: seed))
        let bobLink = ImpairmentProxy(
            configuration: ImpairmentProxyConfiguration(upstream: upstream, profile: profile, seed: seed &+ 1))
        let alicePort = try aliceLink.start(), bobPort = try bobLink.start()
        defer {
            aliceLink.stop()
            bobLink.stop()
        }
        let aliceClient = stack.client(alice), bobClient = stack.client(bob)
        let call = try await aliceClient.createCall(scopeKind: .conversation, scopeID: conversation, mode: .audio)
        let answer = try await bobClient.accept(call.id, withMediaToken: true)
        guard let bobToken = answer.media else { throw ProbeError("the accept carried no media token") }
        let aliceToken = try await aliceClient.mediaToken(forCall: call.id)

        let aliceIO = SimulatedAudioIO(), bobIO = SimulatedAudioIO()
        let aliceSession = RelayMediaSession(
            server: URL(string: "http://127.0.0.1:\(alicePort)")!, transport: WebSocketRelayTransport(), audio: aliceIO)
        let bobSession = RelayMediaSession(
            server: URL(string: "http://127.0.0.1:\(bobPort)")!, transport: WebSocketRelayTransport(), audio: bobIO)
        try await aliceSession.join(url: aliceToken.url, token: aliceToken.token)
        try await bobSession.join(url: bobToken.url, token: bobToken.token)
        aliceSession.startAudio()
        bobSession.startAudio()

        // Real time, on a steady schedule: a phone's audio engine does not wait for anyone.
        let step = 960
        let tail = 48_000  // a second more of listening, for what is still on its way
        let steps = (mouth.count + tail) / step
        let (ear, late) = await offPool { () -> ([Float], Int) in
            var heard: [Float] = []
            heard.reserveCapacity(steps * step)
            var late = 0
            let start = DispatchTime.now().uptimeNanoseconds
            for index in 0..<steps {
                switch pacing {
                case .realTime:
                    let due = start + UInt64(index) * 20_000_000
                    let now = DispatchTime.now().uptimeNanoseconds
                    if due > now {
                        usleep(UInt32((due - now) / 1000))
                    } else if now - due > 10_000_000 {
                        late += 1
                    }
                case .lockstep:
                    usleep(20_000)
                    let waitUntil = DispatchTime.now().uptimeNanoseconds + 5_000_000_000
                    while aliceSession.statistics.sent - bobSession.statistics.playout.received > 3,
                        DispatchTime.now().uptimeNanoseconds < waitUntil
                    {
                        usleep(1_000)
                    }
                }
                let from = index * step
                // The sound, then Alice goes quiet (muted: nothing is sent), so what Bob plays
                // afterwards is only what was still on its way.
                if from >= mouth.count, from - step < mouth.count { aliceSession.setMuted(true) }
                aliceIO.speak(
                    from < mouth.count
                        ? Array(mouth[from..<min(mouth.count, from + step)]) : [Float](repeating: 0, count: step))
                bobIO.speak([Float](repeating: 0, count: step))
                heard += bobIO.listen(step)
            }
            return (heard, late)
        }
        let sent = aliceSession.statistics.sent
        let playout = bobSession.statistics.playout
        aliceSession.leave()
        bobSession.leave()
        _ = try? await aliceClient.perform(.leave, onCall: call.id)

        let measured = AudioAnalysis.compareThroughTheBand(mouth: mouth, ear: ear, maxLag: Self.maxLag)
        // Every frame of the sound that did not play: lost on the way, or dropped to stay shallow.
        let spoken = (mouth.count + step - 1) / step
        let lost = max(0, spoken - min(spoken, playout.played))
        let report = Report(
            profile: profile.name, sound: sound, delayMilliseconds: measured.delayMilliseconds,
            frameLossPercent: 100 * Double(lost) / Double(max(1, spoken)), concealed: playout.concealed,
            snr: measured.snr, medianSegmentSNR: measured.medianSegmentSNR, framesSent: sent,
            found: measured.initialDelayMilliseconds < Double(Self.maxLag - 48) / 48, pacing: pacing, lateSteps: late,
            steps: steps)
        return Recording(report: report, mouth: mouth, ear: ear)
    }
}
