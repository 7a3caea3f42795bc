import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The socket that carries a call's audio to and from the server's built-in relay
/// (`GET /calls/{id}/audio`, SPEC §10): binary messages of 320 bytes, 20 ms of 8 kHz mono
/// 16-bit little-endian PCM, each way.
public protocol RelayAudioTransport: AnyObject, Sendable {
    /// Opens the WebSocket at `url` with the media token; returns once it is open.
    func open(url: URL, token: String) async throws
    /// Sends one frame without waiting (a frame that cannot go soon is better dropped than late).
    func send(_ frame: [UInt8])
    /// The frames the relay sends, until the socket closes (then the stream finishes).
    var frames: AsyncStream<[UInt8]> { get }
    /// Closes the socket; idempotent.
    func close()
}

/// The device's audio input and output, at 48 kHz mono, samples in -1...1.
public protocol RelayAudioIO: AnyObject, Sendable {
    /// Starts the microphone and the speaker: `captured` gets microphone samples as they come
    /// (any number at a time), `render` is asked for the next `count` speaker samples.
    func start(captured: @escaping @Sendable ([Float]) -> Void, render: @escaping @Sendable (Int) -> [Float]) throws
    /// Stops both; idempotent.
    func stop()
}

/// A `MediaSession` over the server's built-in audio relay: the microphone's 48 kHz audio is
/// band-limited to 8 kHz and sent as 20 ms frames; what the relay sends plays out through an
/// adaptive jitter buffer of about 60 ms and is brought back to 48 kHz.
///
/// Audio runs only between `startAudio()` and `stopAudio()`, which the coordinator calls when
/// the call system activates and deactivates the audio session (SPEC §4 rule 7); `join` only
/// opens the socket. Muted, nothing is sent (the others hear silence, and no bandwidth goes).
/// One session (and one transport) serves one call: give the coordinator a factory.
///
/// ```swift
/// let audio = AudioEngineRelayIO()
/// CallCoordinator(..., media: { _ in
///     RelayMediaSession(server: serverURL, transport: URLSessionRelayTransport(), audio: audio)
/// })
/// ```
// @unchecked Sendable: the class has no `var`: its mutable state is in `capture`, `playout` and
// `life` (LockedState, every access through `withLock`), `audioSwitch` is an NSLock, and the rest
// (`server`, `transport`, `audio`, `now`) are `let`s of Sendable types.
public final class RelayMediaSession: MediaSession, @unchecked Sendable {
    public struct Statistics: Sendable, Equatable {
        /// Frames sent to the relay.
        public var sent = 0
        /// The playout side: frames received, played, concealed (gaps), dropped (bursts).
        public var playout = JitterBuffer.Statistics()
    }

    /// The microphone's side, touched by the capture thread.
    private struct Capture {
        var down = AudioResampler.Downsampler()
        /// Microphone samples at 8 kHz not yet a whole frame.
        var pendingNarrow: [Float] = []
        var muted = false
        var running = false
        var sent = 0
    }

    /// The speaker's side, touched by the render thread and the receiver.
    private struct Playout {
        var jitter: JitterBuffer
        var up = AudioResampler.Upsampler()
        /// Speaker samples at 48 kHz made but not yet asked for.
        var pendingWide: [Float] = []
    }

    private struct Life {
        var joining = false
        var joined = false
        var left = false
        var audioRunning = false
        var receiver: Task<Void, Never>?
        /// Why the audio engine did not start, if it did not.
        var audioError: String?
    }

    private let server: URL
    private let transport: any RelayAudioTransport
    private let audio: any RelayAudioIO
    private let now: @Sendable () -> UInt64
    private let capture = LockedState(Capture())
    private let playout: LockedState<Playout>
    private let life = LockedState(Life())
    /// Held across `audio.start` and `audio.stop`, so a stop never overtakes a start.
    private let audioSwitch = NSLock()

    /// `server` is the base URL the client already talks to (the token's `url` is a path on it).
    public init(
        server: URL, transport: any RelayAudioTransport, audio: any RelayAudioIO,
        jitter: JitterBuffer.Settings = JitterBuffer.Settings(),
        now: @escaping @Sendable () -> UInt64 = { UInt64(DispatchTime.now().uptimeNanoseconds) }
    ) {
        self.server = server
        self.transport = transport
        self.audio = audio
        self.now = now
        playout = LockedState(Playout(jitter: JitterBuffer(settings: jitter)))
    }

    /// The socket's URL for a token's `url`: a path is resolved against the server, and
    /// http(s) becomes ws(s).
    public static func socketURL(_ url: String, server: URL) -> URL? {
        guard var components = URLComponents(string: url) else { return nil }
        if components.scheme == nil {
            guard let base = URLComponents(url: server, resolvingAgainstBaseURL: false) else { return nil }
            var resolved = base
            let prefix = base.path.hasSuffix("/") ? String(base.path.dropLast()) : base.path
            resolved.path = prefix + (components.path.hasPrefix("/") ? components.path : "/" + components.path)
            resolved.query = components.query
            components = resolved
        }
        switch components.scheme?.lowercased() {
        case "http": components.scheme = "ws"
        case "https": components.scheme = "wss"
        case "ws", "wss": break
        default: return nil
        }
        return components.url
    }

    public var statistics: Statistics {
        Statistics(sent: capture.withLock { $0.sent }, playout: playout.withLock { $0.jitter.statistics })
    }

    /// Why the audio engine could not start (nil when it did, or was not asked to).
    public var audioError: String? { life.withLock { $0.audioError } }

    // MARK: MediaSession

    public func join(url: String, token: String) async throws {
        guard let socket = Self.socketURL(url, server: server) else { throw RelayMediaError.badURL(url) }
        let first = life.withLock { life -> Bool in
            guard !life.joining, !life.joined, !life.left else { return false }
            life.joining = true
            return true
        }
        guard first else {
            throw RelayMediaError.notOpened("a relay session joins once; make a new one for another call")
        }
        try await transport.open(url: socket, token: token)
        let frames = transport.frames
        let receiver = Task { [weak self] in
            for await frame in frames {
                guard let self else { return }
                // The server sends only whole frames; anything else would change the pace.
                guard frame.count == AudioFrameFormat.bytesPerFrame else { continue }
                let samples = AudioSamples.samples(frame)
                let time = self.now()
                self.playout.withLock { $0.jitter.push(samples, at: time) }
            }
        }
        // A leave while the socket was opening: it must not stay open.
        let stillWanted = life.withLock { life -> Bool in
            life.joining = false
            guard !life.left else { return false }
            life.joined = true
            life.receiver = receiver
            return true
        }
        if !stillWanted {
            receiver.cancel()
            transport.close()
        }
    }

    public func startAudio() {
        audioSwitch.lock()
        defer { audioSwitch.unlock() }
        let start = life.withLock { life -> Bool in
            guard life.joined, !life.left, !life.audioRunning else { return false }
            life.audioRunning = true
            return true
        }
        guard start else { return }
        capture.withLock { capture in
            capture.pendingNarrow = []
            capture.running = true
        }
        playout.withLock { $0.pendingWide = [] }
        do {
            try audio.start(
                captured: { [weak self] samples in self?.captured(samples) },
                render: { [weak self] count in self?.render(count) ?? [Float](repeating: 0, count: count) })
            life.withLock { $0.audioError = nil }
        } catch {
            capture.withLock { $0.running = false }
            life.withLock { life in
                life.audioRunning = false
                life.audioError = String(describing: error)
            }
        }
    }

    public func stopAudio() {
        audioSwitch.lock()
        defer { audioSwitch.unlock() }
        let stop = life.withLock { life -> Bool in
            defer { life.audioRunning = false }
            return life.audioRunning
        }
        guard stop else { return }
        capture.withLock { $0.running = false }
        audio.stop()
    }

    public func setMuted(_ muted: Bool) {
        capture.withLock { $0.muted = muted }
    }

    public func leave() {
        stopAudio()
        let receiver = life.withLock { life -> Task<Void, Never>? in
            life.left = true
            life.joined = false
            defer { life.receiver = nil }
            return life.receiver
        }
        receiver?.cancel()
        transport.close()
    }

    // MARK: Audio threads

    /// Microphone samples: to 8 kHz, then out in whole frames.
    private func captured(_ samples: [Float]) {
        let frames: [[UInt8]] = capture.withLock { capture in
            guard capture.running else { return [] }
            capture.pendingNarrow += capture.down.process(samples)
            var frames: [[UInt8]] = []
            let size = AudioFrameFormat.samplesPerFrame
            while capture.pendingNarrow.count >= size {
                let frame = Array(capture.pendingNarrow[0..<size])
                capture.pendingNarrow.removeFirst(size)
                if !capture.muted { frames.append(AudioSamples.bytes(AudioSamples.int16(frame))) }
            }
            capture.sent += frames.count
            return frames
        }
        for frame in frames { transport.send(frame) }
    }

    /// The next `count` speaker samples: frames from the jitter buffer, back at 48 kHz.
    private func render(_ count: Int) -> [Float] {
        let time = now()
        return playout.withLock { playout in
            while playout.pendingWide.count < count {
                let frame = playout.jitter.pull(samples: AudioFrameFormat.samplesPerFrame, at: time)
                playout.pendingWide += playout.up.process(AudioSamples.float(frame))
            }
            let output = Array(playout.pendingWide[0..<count])
            playout.pendingWide.removeFirst(count)
            return output
        }
    }
}

/// The relay's frame (SPEC §10).
public enum AudioFrameFormat {
    public static let sampleRate = 8_000
    public static let samplesPerFrame = 160
    public static let bytesPerFrame = 320
}

public enum RelayMediaError: Error, Equatable, Sendable {
    /// The media token's `url` is not a path or a ws(s)/http(s) URL.
    case badURL(String)
    /// The relay refused the socket or it did not open.
    case notOpened(String)
}

/// The relay's WebSocket through `URLSessionWebSocketTask` (Apple platforms; Foundation on
/// Linux has the type but no WebSocket support in its libcurl, so there tests use a transport
/// of their own).
// @unchecked Sendable: the class has no `var`: the task, the flags and the in-flight count live
// in `state` (a LockedState, read and written only through `withLock`); `session`, `frames`,
// `continuation` (documented thread-safe) and `maxInFlight` are `let`s.
public final class URLSessionRelayTransport: RelayAudioTransport, @unchecked Sendable {
    private struct State {
        var task: URLSessionWebSocketTask?
        var opened = false
        var closed = false
        /// Sends handed to the task whose completion has not come back.
        var inFlight = 0
    }

    private let session: URLSession
    private let state = LockedState(State())
    public let frames: AsyncStream<[UInt8]>
    private let continuation: AsyncStream<[UInt8]>.Continuation
    /// Sends in flight above which a frame is dropped: late audio is useless.
    private let maxInFlight = 5

    public init(session: URLSession = .shared) {
        self.session = session
        var made: AsyncStream<[UInt8]>.Continuation?
        frames = AsyncStream(bufferingPolicy: .bufferingNewest(50)) { made = $0 }
        continuation = made!
    }

    public func open(url: URL, token: String) async throws {
        var request = URLRequest(url: url)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let task = session.webSocketTask(with: request)
        let fresh = state.withLock { state -> Bool in
            guard !state.opened, !state.closed else { return false }
            state.opened = true
            state.task = task
            return true
        }
        guard fresh else { throw RelayMediaError.notOpened("a relay transport opens once") }
        task.resume()
        // Open once a ping is answered (URLSessionWebSocketTask has no "opened" callback
        // without a delegate).
        do {
            try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
                task.sendPing { error in
                    if let error {
                        done.resume(throwing: RelayMediaError.notOpened(String(describing: error)))
                    } else {
                        done.resume()
                    }
                }
            }
        } catch {
            close()
            throw error
        }
        // Closed while it was opening: nothing may stay open.
        if state.withLock({ $0.closed }) {
            task.cancel(with: .normalClosure, reason: nil)
            return
        }
        receive(on: task)
    }

    private func receive(on task: URLSessionWebSocketTask) {
        task.receive { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(.data(let data)):
                self.continuation.yield([UInt8](data))
                self.receive(on: task)
            case .success:
                self.receive(on: task)
            case .failure:
                self.continuation.finish()
            }
        }
    }

    public func send(_ frame: [UInt8]) {
        let task = state.withLock { state -> URLSessionWebSocketTask? in
            guard !state.closed, let task = state.task, state.inFlight < maxInFlight else { return nil }
            state.inFlight += 1
            return task
        }
        guard let task else { return }
        task.send(.data(Data(frame))) { [weak self] _ in
            self?.state.withLock { $0.inFlight -= 1 }
        }
    }

    public func close() {
        let task = state.withLock { state -> URLSessionWebSocketTask? in
            defer { state.closed = true }
            return state.closed ? nil : state.task
        }
        task?.cancel(with: .normalClosure, reason: nil)
        continuation.finish()
    }
}
