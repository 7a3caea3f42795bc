import Foundation
import Synchronization
@testable import SwitchboardHTTP
@testable import SwitchboardServer
import SwitchboardStore

/// A fresh directory under the system temporary directory, removed by `remove()`.
struct ScratchDirectory {
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

/// An `Application` over a scratch database, for in-process tests; `close()` cleans up.
struct TestApplication {
    let application: Application
    let sink: RecordingLogSink
    let directory: ScratchDirectory

    init() throws {
        directory = ScratchDirectory()
        let database = try Database(
            configuration: DatabaseConfiguration(path: directory.path + "/switchboard.sqlite3"), migrations: Schema.migrations)
        sink = RecordingLogSink()
        application = Application(
            configuration: ServerConfiguration(), database: database, logger: Logger(level: .debug, sink: sink))
    }

    func request(_ method: String, _ target: String, headers: HTTPHeaders = ["Host": "test"], body: String = "") async -> HTTPResponse {
        await application.handle(HTTPRequest(method: method, target: target, headers: headers, body: Array(body.utf8)))
    }

    func close() {
        application.database.close()
        directory.remove()
    }
}

extension HTTPResponse {
    var text: String { String(decoding: bodyBytes, as: UTF8.self) }
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(bodyBytes)) as? [String: Any] }
}
