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
///
/// ```swift
/// let media = RelayMediaSession(server: serverURL, transport: URLSessionRelayTransport(), audio: engineIO)
/// CallCoordinator(..., media: { _ in media })
/// ```
public final class RelayMediaSession: MediaSession, @unchecked Sendable {
    // @unchecked Sendable: every mutable field lives in `state` (a lock); the rest is `let`.
    public struct Statistics: Sendable, Equatable {
        /// Frames sent to the relay.
        public var sent = 0
        /// The playout side: frames received, played, concealed (gaps), dropped (bursts).
        public var playout = JitterBuffer.Statistics()
    }

    private struct State {
        var jitter: JitterBuffer
        var down = AudioResampler.Downsampler()
        var up = AudioResampler.Upsampler()
        /// Microphone samples at 8 kHz not yet a whole frame.
        var pendingNarrow: [Float] = []
        /// Speaker samples at 48 kHz made but not yet asked for.
        var pendingWide: [Float] = []
        var muted = false
        var audioRunning = false
        var joined = false
        var sent = 0
        var receiver: Task<Void, Never>?
    }

    private let server: URL
    private let transport: any RelayAudioTransport
    private let audio: any RelayAudioIO
    private let now: @Sendable () -> UInt64
    private let state: LockedState<State>

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
        state = LockedState(State(jitter: JitterBuffer(settings: jitter)))
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
        state.withLock { Statistics(sent: $0.sent, playout: $0.jitter.statistics) }
    }

    // MARK: MediaSession

    public func join(url: String, token: String) async throws {
        guard let socket = Self.socketURL(url, server: server) else { throw RelayMediaError.badURL(url) }
        try await transport.open(url: socket, token: token)
        let frames = transport.frames
        let receiver = Task { [weak self] in
            for await frame in frames {
                guard let self else { return }
                let samples = AudioSamples.samples(frame)
                let time = self.now()
                self.state.withLock { $0.jitter.push(samples, at: time) }
            }
        }
        state.withLock { state in
            state.joined = true
            state.receiver = receiver
        }
    }

    public func startAudio() {
        let start = state.withLock { state -> Bool in
            guard state.joined, !state.audioRunning else { return false }
            state.audioRunning = true
            state.pendingNarrow = []
            state.pendingWide = []
            return true
        }
        guard start else { return }
        do {
            try audio.start(
                captured: { [weak self] samples in self?.captured(samples) },
                render: { [weak self] count in self?.render(count) ?? [Float](repeating: 0, count: count) })
        } catch {
            state.withLock { $0.audioRunning = false }
        }
    }

    public func stopAudio() {
        let stop = state.withLock { state -> Bool in
            defer { state.audioRunning = false }
            return state.audioRunning
        }
        if stop { audio.stop() }
    }

    public func setMuted(_ muted: Bool) {
        state.withLock { $0.muted = muted }
    }

    public func leave() {
        stopAudio()
        let receiver = state.withLock { state -> Task<Void, Never>? in
            state.joined = false
            defer { state.receiver = nil }
            return state.receiver
        }
        receiver?.cancel()
        transport.close()
    }

    // MARK: Audio threads

    /// Microphone samples: to 8 kHz, then out in whole frames.
    private func captured(_ samples: [Float]) {
        let frames: [[UInt8]] = state.withLock { state in
            guard state.audioRunning else { return [] }
            state.pendingNarrow += state.down.process(samples)
            var frames: [[UInt8]] = []
            let size = AudioFrameFormat.samplesPerFrame
            while state.pendingNarrow.count >= size {
                let frame = Array(state.pendingNarrow[0..<size])
                state.pendingNarrow.removeFirst(size)
                if !state.muted { frames.append(AudioSamples.bytes(AudioSamples.int16(frame))) }
            }
            state.sent += frames.count
            return frames
        }
        for frame in frames { transport.send(frame) }
    }

    /// The next `count` speaker samples: frames from the jitter buffer, back at 48 kHz.
    private func render(_ count: Int) -> [Float] {
        let time = now()
        return state.withLock { state in
            while state.pendingWide.count < count {
                let frame = state.jitter.pull(samples: AudioFrameFormat.samplesPerFrame, at: time)
                state.pendingWide += state.up.process(AudioSamples.float(frame))
            }
            let output = Array(state.pendingWide[0..<count])
            state.pendingWide.removeFirst(count)
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
public final class URLSessionRelayTransport: RelayAudioTransport, @unchecked Sendable {
    // @unchecked Sendable: `task` and `continuation` are guarded by `state`.
    private let session: URLSession
    private let state = LockedState<(task: URLSessionWebSocketTask?, closed: Bool)>((nil, false))
    public let frames: AsyncStream<[UInt8]>
    private let continuation: AsyncStream<[UInt8]>.Continuation

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
        state.withLock { $0.task = task }
        task.resume()
        // Open once a ping is answered (URLSessionWebSocketTask has no "opened" callback
        // without a delegate).
        try await withCheckedThrowingContinuation { (done: CheckedContinuation<Void, any Error>) in
            task.sendPing { error in
                if let error { done.resume(throwing: RelayMediaError.notOpened(String(describing: error))) } else { done.resume() }
            }
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
        guard let task = state.withLock({ $0.closed ? nil : $0.task }) else { return }
        task.send(.data(Data(frame))) { _ in }
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
