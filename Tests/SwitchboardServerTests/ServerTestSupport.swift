import Foundation
import Synchronization
@testable import SwitchboardHTTP
@testable import SwitchboardPush
@testable import SwitchboardServer
import SwitchboardStore
import SwitchboardObservability
import Testing

/// A fresh directory under the system temporary directory, removed by `remove()`.
struct ScratchDirectory: Sendable {
    let path: String

    init() {
        path =
            FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-test-\(UUID().uuidString)").path
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

/// An `Application` over a scratch database (or, with `sharing`, another's PostgreSQL
/// database, as a second instance would), for in-process tests, with its background work
/// (waiter timeouts, retention) running; `close()` stops it and cleans up.
final class TestApplication: Sendable {
    let application: Application
    let sink: RecordingLogSink
    let directory: ScratchDirectory
    private let background: Task<Void, Never>
    private let dropDatabase: @Sendable () -> Void
    /// The PostgreSQL database's URL (nil on SQLite): another instance passes it as `sharing`
    /// to run on the same data (only the first one drops it).
    let postgresURL: String?

    init(
        configuration: ServerConfiguration = ServerConfiguration(),
        environment: ServerEnvironment = .live,
        eventHooks: EventRoutes.Hooks = EventRoutes.Hooks(),
        apnsTransport: (any PushTransport)? = nil,
        fcmTransport: (any PushTransport)? = nil,
        huaweiTransport: (any PushTransport)? = nil,
        vendorTransports: [String: any PushTransport] = [:],
        pushJitter: (@Sendable () -> Double)? = nil,
        store: StoreKind = .default,
        sharing: String? = nil,
        asShipped: Bool = false
    ) throws {
        directory = ScratchDirectory()
        let database: any SQLStore
        switch store {
        case .sqlite:
            database = try Database(
                configuration: DatabaseConfiguration(path: directory.path + "/switchboard.sqlite3"),
                migrations: Schema.migrations)
            dropDatabase = {}
            postgresURL = nil
        case .postgres:
            let fresh = try sharing.map { (url: $0, drop: {}) } ?? TestPostgres.freshDatabase()
            do {
                database = try PostgresDatabase(url: fresh.url, migrations: PostgresSchema.migrations, readerCount: 2)
            } catch {
                fresh.drop()
                throw error
            }
            postgresURL = fresh.url
            dropDatabase = fresh.drop
        }
        sink = RecordingLogSink()
        var configuration = configuration
        configuration.accounts.passwordScryptLogN = 10  // fast hashes; the cost itself is tested in SwitchboardCryptoTests
        // Test worlds create many calls and users and jump their clocks by months: unless a test
        // asks for the server as shipped, its limits are lifted and its sessions live ten years
        // (the shipped values are tested here with `asShipped` and live through the binary).
        if !asShipped {
            configuration.limits = .lifted
            configuration.accounts.sessionIdleDays = 3650
            configuration.accounts.sessionMaxDays = 3650
        }
        let application = try Application(
            configuration: configuration, database: database, logger: Logger(level: .debug, sink: sink),
            environment: environment, eventHooks: eventHooks, apnsTransport: apnsTransport, fcmTransport: fcmTransport,
            huaweiTransport: huaweiTransport, vendorTransports: vendorTransports, pushJitter: pushJitter)
        self.application = application
        background = Task { await application.run() }
    }

    func request(
        _ method: String, _ target: String, headers: HTTPHeaders = ["Host": "test"], body: String = ""
    ) async -> HTTPResponse {
        await application.handle(HTTPRequest(method: method, target: target, headers: headers, body: Array(body.utf8)))
    }

    func close() {
        background.cancel()
        application.database.close()
        dropDatabase()
        directory.remove()
    }
}

extension HTTPResponse {
    var text: String { String(decoding: bodyBytes, as: UTF8.self) }
    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(bodyBytes)) as? [String: Any] }
}

/// The stores the server runs on; tests that take one run on each (PostgreSQL when the test
/// cluster of `make test` is there, which `make test` requires).
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    static var allCases: [StoreKind] { TestPostgres.available ? [.sqlite, .postgres] : [.sqlite] }

    var testDescription: String { rawValue }

    /// The store of tests that do not name one: SQLite, or what `SWITCHBOARD_TEST_STORE` says
    /// (`make test` runs the server suite once more with `postgres`).
    static var `default`: StoreKind {
        ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_STORE"].flatMap(StoreKind.init(rawValue:)) ?? .sqlite
    }
}

/// The throw-away PostgreSQL cluster `scripts/with-postgres.sh` starts for `make test`.
enum TestPostgres {
    static var url: String? { ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_POSTGRES_URL"] }
    /// Set by `make test`: the cluster must be there, so a missing one fails instead of skipping.
    static var required: Bool { ProcessInfo.processInfo.environment["SWITCHBOARD_REQUIRE_POSTGRES"] == "1" }
    static var available: Bool { url != nil || required }

    /// A new empty database on the cluster, and how to drop it (after every connection to it
    /// closed).
    static func freshDatabase() throws -> (url: String, drop: @Sendable () -> Void) {
        guard let url else {
            throw TestFailure("SWITCHBOARD_TEST_POSTGRES_URL is not set: run the tests through make test")
        }
        let name = "sb_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let admin = try PostgresConnection(url: url)
        defer { admin.close() }
        try admin.executeScript("CREATE DATABASE \(name)")
        let databaseURL =
            url.contains("/postgres?")
            ? url.replacingOccurrences(of: "/postgres?", with: "/\(name)?") : url + "&dbname=\(name)"
        return (
            databaseURL,
            {
                guard let admin = try? PostgresConnection(url: url) else { return }
                try? admin.executeScript("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
                admin.close()
            }
        )
    }
}
