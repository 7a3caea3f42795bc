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
        guard url.scheme == "ws", let host = url.host, let port = url.port else {
            throw RelayMediaError.badURL(url.absoluteString)
        }
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

    /// Sends on the caller's thread. The client's send can block while the socket's buffer is
    /// full; over loopback and the weak-network proxy (which reads up to 256 KB ahead) it does
    /// not in practice. (A queue of its own was tried: in a busy test process its thread was not
    /// scheduled for long stretches, and frames were dropped at the sender.)
    public func send(_ frame: [UInt8]) {
        client.withLock { $0 }?.send(.binary(frame))
    }

    public func close() {
        closedEarly.withLock { $0 = true }
        client.withLock { $0 }?.close()
    }
}
