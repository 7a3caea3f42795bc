import Foundation
import Synchronization
import SwitchboardHTTP
import SwitchboardKit
import SwitchboardTesting

/// The relay's audio socket on Linux, over this package's own WebSocket client (Foundation's
/// `URLSessionWebSocketTask` has no WebSocket support there): for the demo, the benchmarks and
/// the live tests. Plain `ws://` to an IPv4 address only.
public final class WebSocketRelayTransport: RelayAudioTransport, Sendable {
    private let client = Mutex<WebSocketClient?>(nil)
    private let sender = DispatchQueue(label: "switchboard.relay-transport.send")
    private let waiting = SharedCount()
    private let closedEarly = Mutex(false)
    public let frames: AsyncStream<[UInt8]>
    private let continuation: AsyncStream<[UInt8]>.Continuation
    /// How the socket ended, once it did.
    private let ending = Mutex<WebSocketCloseInfo?>(nil)

    public init() {
        (frames, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingNewest(100))
    }

    public var closeInfo: WebSocketCloseInfo? { ending.withLock { $0 } }

    public func open(url: URL, token: String) async throws {
        guard url.scheme == "ws", let host = url.host, let port = url.port else { throw RelayMediaError.badURL(url.absoluteString) }
        let path = url.path + (url.query.map { "?" + $0 } ?? "")
        let continuation = self.continuation
        let opened = try await offPool {
            try WebSocketClient.connect(
                host: host, port: port, path: path, headers: ["Authorization": "Bearer \(token)"],
                handlers: .init(
                    onMessage: { message in
                        if case .binary(let bytes) = message { continuation.yield(bytes) }
                    },
                    onClose: { [weak self] info in
                        self?.ending.withLock { $0 = info }
                        continuation.finish()
                    }))
        }
        client.withLock { $0 = opened }
        if closedEarly.withLock({ $0 }) { opened.close() }
    }

    /// Frames go out on a queue of their own, at most 5 waiting: the client's send blocks
    /// while the socket's buffer is full, and the caller (an audio thread) must not; a frame
    /// that cannot go soon is dropped, as late audio is useless.
    public func send(_ frame: [UInt8]) {
        guard let client = client.withLock({ $0 }) else { return }
        let admitted = waiting.withLock { waiting -> Bool in
            guard waiting < 5 else { return false }
            waiting += 1
            return true
        }
        guard admitted else { return }
        let waiting = self.waiting
        sender.async {
            client.send(.binary(frame))
            waiting.withLock { $0 -= 1 }
        }
    }

    public func close() {
        closedEarly.withLock { $0 = true }
        client.withLock { $0 }?.close()
    }
}

/// A counter shared between a caller and a queue.
final class SharedCount: Sendable {
    private let value = Mutex(0)
    func withLock<T>(_ body: (inout Int) -> T) -> T { value.withLock { body(&$0) } }
}
