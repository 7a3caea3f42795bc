import Foundation
import SwitchboardDemo
import SwitchboardKitTesting
import SwitchboardNetSim
import Testing

/// Real sound through the built-in relay (issue 20 §5): a tone and a phrase spoken by espeak-ng,
/// from one simulated phone to another, each behind its own weak-network link, through the
/// server in this process. Driven in lockstep (each 20 ms step waits until Alice's frames are
/// on their way), so the test proves only what lockstep can on any machine: the sound arrives,
/// its 20 ms pieces intact through the 8 kHz path. Mouth-to-ear delay, frame loss and speech
/// quality are real-time figures, measured by `switchboard-dev bench audio`, not here.
@Suite("Sound through the audio relay", .serialized, .timeLimit(.minutes(4)))
struct AudioRelayLiveTests {
    static func tone(_ frequency: Double, seconds: Double) -> [Float] {
        (0..<Int(48_000 * seconds)).map { Float(0.4 * sin(2 * Double.pi * frequency * Double($0) / 48_000)) }
    }

    @Test(arguments: ["good", "poor_4g"])
    func aToneAndAPhraseArriveIntact(profileName: String) async throws {
        let profile = try #require(NetworkProfile.named(profileName))
        let stack = try await DemoStack()
        do {
            // A tone repeats every period, so it comes after a second of noise-like sound, on
            // which the delay is found; the phrase is real speech.
            let phrase = try AudioProbe.spoken("The phone rings, even locked, on a bad network, and the call connects.")
            let sounds: [(String, [Float])] = [
                ("tone", AudioAnalysis.pseudoSpeech(seconds: 1) + Self.tone(1000, seconds: 2)), ("speech", phrase),
            ]
            for (name, mouth) in sounds {
                let report = try await AudioProbe.run(
                    stack: stack, profile: profile, sound: name, mouth: mouth, pacing: .lockstep)
                print(report.line)
                #expect(report.framesSent >= mouth.count / 960 - 2, "\(report.line)")
                #expect(report.found, "the sound was not found within 500 ms: \(report.line)")
                #expect(report.pathIntact, "most of the sound did not arrive intact: \(report.line)")
            }
        } catch {
            await stack.shutDown()
            throw error
        }
        await stack.shutDown()
    }
}
