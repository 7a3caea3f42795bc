import Foundation
import Synchronization
import Testing
@testable import SwitchboardKit
import SwitchboardKitTesting

/// A relay socket in memory: what one side sends, the peer receives.
// @unchecked Sendable: its `var`s (`peer`, `opened`, `sentCount`, `closed`) are read and written
// only inside `lock.withLock` (`peer` is also set in `pair()` before either side is shared);
// `frames` and `continuation` are `let`s, and a continuation may be used from any thread.
final class LoopbackRelayTransport: RelayAudioTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var peer: LoopbackRelayTransport?
    private var openedWith: (url: URL, token: String)?
    private var sentCount = 0
    private var closed = false
    let frames: AsyncStream<[UInt8]>
    private let continuation: AsyncStream<[UInt8]>.Continuation

    init() {
        var made: AsyncStream<[UInt8]>.Continuation?
        frames = AsyncStream { made = $0 }
        continuation = made!
    }

    static func pair() -> (LoopbackRelayTransport, LoopbackRelayTransport) {
        let a = LoopbackRelayTransport(), b = LoopbackRelayTransport()
        a.peer = b
        b.peer = a
        return (a, b)
    }

    func open(url: URL, token: String) async throws { lock.withLock { openedWith = (url, token) } }

    var opened: (url: URL, token: String)? { lock.withLock { openedWith } }

    func send(_ frame: [UInt8]) {
        let peer = lock.withLock { () -> LoopbackRelayTransport? in
            sentCount += 1
            return closed ? nil : self.peer
        }
        peer?.continuation.yield(frame)
    }

    func close() {
        lock.withLock { closed = true }
        continuation.finish()
    }

    var sent: Int { lock.withLock { sentCount } }
    var isClosed: Bool { lock.withLock { closed } }
}

@Suite("The relay media session", .serialized, .timeLimit(.minutes(2)))
struct RelayMediaSessionTests {
    static let server = URL(string: "http://192.168.1.20:8080")!

    @Test func theTokensPathBecomesASocketURLOnTheServer() {
        #expect(
            RelayMediaSession.socketURL("/calls/c1/audio", server: Self.server)?.absoluteString
                == "ws://192.168.1.20:8080/calls/c1/audio")
        #expect(
            RelayMediaSession.socketURL("/calls/c1/audio", server: URL(string: "https://chat.example.com/api/")!)?
                .absoluteString
                == "wss://chat.example.com/api/calls/c1/audio")
        #expect(
            RelayMediaSession.socketURL("wss://media.example.com/x", server: Self.server)?.absoluteString
                == "wss://media.example.com/x")
        #expect(RelayMediaSession.socketURL("ftp://nope", server: Self.server) == nil)
    }

    @Test func audioFlowsOnlyBetweenStartAndStopAndMutingSendsNothing() async throws {
        let (transport, _) = LoopbackRelayTransport.pair()
        let io = SimulatedAudioIO()
        let session = RelayMediaSession(server: Self.server, transport: transport, audio: io)
        try await session.join(url: "/calls/c1/audio", token: "tok")
        #expect(
            transport.opened?.url.absoluteString == "ws://192.168.1.20:8080/calls/c1/audio"
                && transport.opened?.token == "tok")
        // Joined, but the call system has not activated audio: nothing is captured or sent.
        io.speak([Float](repeating: 0.1, count: 960))
        #expect(!io.isRunning && transport.sent == 0)
        session.startAudio()
        #expect(io.isRunning)
        io.speak([Float](repeating: 0.1, count: 500))
        #expect(transport.sent == 0, "not yet a whole 20 ms frame")
        io.speak([Float](repeating: 0.1, count: 460 + 960 * 2))
        #expect(transport.sent == 3)
        session.setMuted(true)
        io.speak([Float](repeating: 0.1, count: 960 * 5))
        #expect(transport.sent == 3)
        session.setMuted(false)
        io.speak([Float](repeating: 0.1, count: 960))
        #expect(transport.sent == 4)
        session.stopAudio()
        #expect(!io.isRunning)
        session.leave()
        #expect(transport.isClosed)
    }

    @Test func aToneCrossesFromOnePhoneToTheOtherAtFullLevelAndShortDelay() async throws {
        let (aliceSide, bobSide) = LoopbackRelayTransport.pair()
        let aliceIO = SimulatedAudioIO(), bobIO = SimulatedAudioIO()
        // The sessions' clock moves 20 ms per frame, as a phone's audio does: the jitter buffer
        // sees the same arrival times however busy the machine running the test is.
        let clock = Atomic<UInt64>(1_000_000_000)
        let now: @Sendable () -> UInt64 = { clock.load(ordering: .relaxed) }
        let alice = RelayMediaSession(server: Self.server, transport: aliceSide, audio: aliceIO, now: now)
        let bob = RelayMediaSession(server: Self.server, transport: bobSide, audio: bobIO, now: now)
        try await alice.join(url: "/calls/c/audio", token: "a")
        try await bob.join(url: "/calls/c/audio", token: "b")
        alice.startAudio()
        bob.startAudio()
        // Two seconds of noise-like sound, 20 ms at a time: Alice speaks, the frame crosses,
        // Bob's speaker plays.
        let mouth = AudioAnalysis.pseudoSpeech(seconds: 2)
        var ear: [Float] = []
        for step in 0..<100 {
            clock.wrappingAdd(20_000_000, ordering: .relaxed)
            aliceIO.speak(Array(mouth[(step * 960)..<((step + 1) * 960)]))
            #expect(await eventuallyReceived(bob, step + 1))
            ear += bobIO.listen(960)
        }
        let measured = AudioAnalysis.compareThroughTheBand(mouth: mouth, ear: ear, maxLag: 4_800)
        // Delay: both filters (6 ms) and the jitter buffer's prefill (about 40 ms here).
        #expect(
            measured.delayMilliseconds > 35 && measured.delayMilliseconds < 80,
            "mouth to ear \(measured.delayMilliseconds) ms")
        // Nothing lost in memory: what plays is the band-limited sound itself.
        #expect(measured.snr > 30, "SNR \(measured.snr) dB")
        #expect(measured.medianSegmentSNR > 30, "median SNR \(measured.medianSegmentSNR) dB")
        #expect(bob.statistics.playout.concealed == 0)
        alice.leave()
        bob.leave()
    }

    private func eventuallyReceived(_ session: RelayMediaSession, _ count: Int) async -> Bool {
        for _ in 0..<2000 {
            if session.statistics.playout.received >= count { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return false
    }
}
