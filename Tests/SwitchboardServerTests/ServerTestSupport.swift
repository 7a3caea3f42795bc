import Foundation
import Synchronization
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardStore
import SwitchboardObservability

/// A fresh directory under the system temporary directory, removed by `remove()`.
struct ScratchDirectory: Sendable {
    let path: String

    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-test-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Collects log lines in memory.
final class RecordingLogSink: LogSink {
    private let lines = Mutex<[String]>([])
    func write(line: String) { lines.withLock { $0.append(line) } }
    var recorded: [String] { lines.withLock { $0 } }
}

/// An `Application` over a scratch database, for in-process tests, with its background work
/// (waiter timeouts, retention) running; `close()` stops it and cleans up.
final class TestApplication: Sendable {
    let application: Application
    let sink: RecordingLogSink
    let directory: ScratchDirectory
    private let background: Task<Void, Never>

    init(
        configuration: ServerConfiguration = ServerConfiguration(),
        environment: ServerEnvironment = .live,
        eventHooks: EventRoutes.Hooks = EventRoutes.Hooks(),
        pushProvider: (any PushProvider)? = nil,
        pushJitter: (@Sendable () -> Double)? = nil
    ) throws {
        directory = ScratchDirectory()
        let database = try Database(
            configuration: DatabaseConfiguration(path: directory.path + "/switchboard.sqlite3"), migrations: Schema.migrations)
        sink = RecordingLogSink()
        var configuration = configuration
        configuration.passwordScryptLogN = 10  // fast hashes; the cost itself is tested in SwitchboardCryptoTests
        let application = try Application(
            configuration: configuration, database: database, logger: Logger(level: .debug, sink: sink),
            environment: environment, eventHooks: eventHooks, pushProvider: pushProvider, pushJitter: pushJitter)
        self.application = application
        background = Task { await application.run() }
    }

    func request(_ method: String, _ target: String, headers: HTTPHeaders = ["Host": "test"], body: String = "") async -> HTTPResponse {
        await application.handle(HTTPRequest(method: method, target: target, headers: headers, body: Array(body.utf8)))
    }

    func close() {
        background.cancel()
        application.database.close()
        directory.remove()
    }
}

extension HTTPResponse {
    var text: String { String(decoding: bodyBytes, as: UTF8.self) }
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(bodyBytes)) as? [String: Any] }
}
