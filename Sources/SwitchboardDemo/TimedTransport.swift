import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import SwitchboardKit

/// Every request one phone sent, with when it left and when its answer came back (the wake-up
/// bench's per-step figures).
final class RequestLog: Sendable {
    struct Entry: Sendable {
        /// `POST /calls/…/accept`.
        let request: String
        let sentAt: Date
        let answeredAt: Date
        /// nil when no answer came (a transport failure).
        let status: Int?
    }

    private let entries = Mutex<[Entry]>([])

    func add(_ entry: Entry) { entries.withLock { $0.append(entry) } }

    /// The entries whose request line satisfies `predicate`, in the order they were answered.
    func entries(where predicate: (String) -> Bool) -> [Entry] {
        entries.withLock { $0.filter { predicate($0.request) } }
    }
}

/// Passes every request to `inner` and writes down its timing in `log`.
struct TimedTransport: HTTPTransport {
    let inner: any HTTPTransport
    let log: RequestLog

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        try await send(request, repeatable: false)
    }

    func send(_ request: URLRequest, repeatable: Bool) async throws -> (Data, HTTPURLResponse) {
        try await timing(request) { try await inner.send(request, repeatable: repeatable) }
    }

    func sendHeld(_ request: URLRequest, copies: Int) async throws -> (Data, HTTPURLResponse) {
        try await timing(request) { try await inner.sendHeld(request, copies: copies) }
    }

    private func timing(
        _ request: URLRequest, _ send: () async throws -> (Data, HTTPURLResponse)
    ) async throws -> (Data, HTTPURLResponse) {
        let line = "\(request.httpMethod ?? "GET") \(request.url?.path ?? "")"
        let sent = Date()
        do {
            let answer = try await send()
            log.add(RequestLog.Entry(request: line, sentAt: sent, answeredAt: Date(), status: answer.1.statusCode))
            return answer
        } catch {
            log.add(RequestLog.Entry(request: line, sentAt: sent, answeredAt: Date(), status: nil))
            throw error
        }
    }

    func warm(_ url: URL) { inner.warm(url) }

    func invalidate() { inner.invalidate() }
}
