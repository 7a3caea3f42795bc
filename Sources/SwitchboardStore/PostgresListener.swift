import CLibPQ
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `LISTEN` on one channel of a PostgreSQL database, on a connection and thread of its own:
/// every notification's payload goes to `onNotice`, in the order the commits that sent them
/// committed. A lost connection is reconnected (with backoff, 0.1 s doubling to 2 s); after
/// each `LISTEN` took effect, the first one included, `onListening` runs, so whoever relies
/// on the notifications can re-check what it waits for: a notification sent while the
/// connection was down is never delivered, and this is how none is missed.
public final class PostgresListener: StoreNoticeListener {
    /// A channel name: lowercase letters, digits and underscores (it is spliced into `LISTEN`).
    public let channel: String
    private let url: String
    private let onNotice: @Sendable (String) -> Void
    private let onListening: @Sendable () -> Void
    private let stopped = Atomic<Bool>(false)
    private let listening = Atomic<Int>(0)

    public init(
        url: String, channel: String, onNotice: @escaping @Sendable (String) -> Void,
        onListening: @escaping @Sendable () -> Void = {}
    ) throws {
        guard !channel.isEmpty,
            channel.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 })
        else {
            throw StoreError(
                code: .misuse,
                message: "the channel name '\(channel)' must be lowercase letters, digits and underscores")
        }
        self.url = url
        self.channel = channel
        self.onNotice = onNotice
        self.onListening = onListening
    }

    /// How many times a `LISTEN` took effect (1 after the first connect; more after reconnects).
    public var listenCount: Int { listening.load(ordering: .relaxed) }

    /// Listens until the task is cancelled (checked at least every 250 ms).
    public func run() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    loop()
                    continuation.resume()
                }
                thread.name = "sb-pg-listen"
                thread.start()
            }
        } onCancel: {
            stopped.store(true, ordering: .relaxed)
        }
    }

    private var isStopped: Bool { stopped.load(ordering: .relaxed) }

    private func loop() {
        var backoff = 0.1
        while !isStopped {
            // With the connection defaults: a bounded connect, and keepalives that notice a
            // peer gone silent (a half-open socket would otherwise wait here for ever).
            if let connection = try? PostgresConnection(url: url), let handle = connection.rawHandle {
                if listen(on: handle) {
                    backoff = 0.1
                    listening.add(1, ordering: .relaxed)
                    onListening()
                    receive(on: handle)
                }
                connection.close()
            }
            // Down (or never up): wait, then connect again.
            var waited = 0.0
            while !isStopped, waited < backoff {
                usleep(50_000)
                waited += 0.05
            }
            backoff = min(backoff * 2, 2)
        }
    }

    private func listen(on connection: OpaquePointer) -> Bool {
        guard let result = PQexec(connection, "LISTEN \(channel)") else { return false }
        defer { PQclear(result) }
        return PQresultStatus(result) == PGRES_COMMAND_OK
    }

    /// Hands on notifications until the connection fails or the listener stops.
    private func receive(on connection: OpaquePointer) {
        let socket = PQsocket(connection)
        guard socket >= 0 else { return }
        while !isStopped {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 250)
            if ready < 0, errno != EINTR { return }
            if ready > 0 {
                guard PQconsumeInput(connection) == 1 else { return }
                while let notice = PQnotifies(connection) {
                    let payload = String(cString: notice.pointee.extra)
                    PQfreemem(notice)
                    onNotice(payload)
                }
            }
            if PQstatus(connection) != CONNECTION_OK { return }
        }
    }
}
