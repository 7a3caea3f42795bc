import Foundation
import Synchronization
import SwitchboardHTTP
import SwitchboardLifecycle
import SwitchboardStore
import SwitchboardObservability
import SwitchboardPush

/// The whole server in this process: database, application, HTTP listener and background
/// work. `switchboard serve` runs one; the demo and the wake-up bench run one beside their
/// simulated phones.
///
/// Creating it opens the database and wires the application; nothing runs yet. `listen()`
/// binds the port; `run()` runs the long-running parts as services (the push provider's
/// connections, the background work, the HTTP listener) until they are asked to stop, then
/// stops them in reverse order and closes the database.
public final class EmbeddedServer: Sendable {
    /// What stopped a start, with the step that failed.
    public struct StartError: Error, CustomStringConvertible {
        public let step: String
        public let underlying: any Error
        public var description: String { "\(step): \(underlying)" }
    }

    public let application: Application
    let database: any SQLStore
    let server: HTTPServer
    /// The listener of `/metrics` and `/admin/*` when `operatorListen` is set.
    let operatorServer: HTTPServer?
    let configuration: ServerConfiguration
    /// The run started by `start()`, for `stop()`.
    private let background = Mutex<Task<Void, any Error>?>(nil)

    /// Opens the database under `configuration.store.dataDirectory` and wires the application.
    public init(configuration: ServerConfiguration, logger: Logger) throws(StartError) {
        self.configuration = configuration
        do {
            database = try Self.openStore(configuration)
        } catch {
            throw StartError(step: "cannot open the database", underlying: error)
        }
        do {
            application = try Application(configuration: configuration, database: database, logger: logger)
        } catch {
            database.close()
            throw StartError(step: "cannot start", underlying: error)
        }
        let problems = TransportProblemReporter(metrics: application.metrics, logger: logger)
        let server = HTTPServer(
            configuration: configuration.httpConfiguration(
                errorResponder: APIError.httpRefusal,
                admitBody: { [application] head in application.admitBody(head) },
                reportProblem: { problems.report($0) }),
            handler: application.handle)
        self.server = server
        if let address = configuration.http.operatorListen {
            // A small private listener: one loop, few connections, the same handler but only
            // for the operator's paths.
            var operatorConfiguration = configuration
            operatorConfiguration.http.listen = address
            operatorConfiguration.http.loopThreads = 1
            operatorConfiguration.http.maxConnections = 256
            operatorConfiguration.http.maxConnectionsPerAddress = 0
            operatorServer = HTTPServer(
                configuration: operatorConfiguration.httpConfiguration(
                    errorResponder: APIError.httpRefusal,
                    admitBody: { [application] head in application.admitBody(head, on: .operatorOnly) },
                    reportProblem: { problems.report($0) }),
                handler: { [application] request in await application.handle(request, on: .operatorOnly) })
        } else {
            operatorServer = nil
        }
        application.metrics.addGauge("switchboard_http_open_connections", help: "Open client connections.") {
            Double(server.openConnectionCount)
        }
        application.metrics.addGauge(
            "switchboard_http_body_buffer_bytes", help: "Bytes reserved for request bodies still arriving."
        ) {
            Double(server.bufferedBodyByteCount)
        }
    }

    /// The store the configuration names: the embedded SQLite database under `dataDirectory`,
    /// or PostgreSQL at `postgresURL` (migrated at open, one instance at a time).
    static func openStore(_ configuration: ServerConfiguration) throws -> any SQLStore {
        switch configuration.store.choice {
        case .postgres(let url):
            guard !url.isEmpty else {
                throw ConfigurationError(
                    message: "database is postgres, but postgresURL (SWITCHBOARD_POSTGRES_URL) is not set")
            }
            return try PostgresDatabase(url: url, migrations: PostgresSchema.migrations)
        case .sqlite(let directory):
            return try Database(
                configuration: DatabaseConfiguration(
                    path: directory + "/switchboard.sqlite3", readsOnCallerThread: true),
                migrations: Schema.migrations)
        }
    }

    /// Where the data is, for a log line: the SQLite file, or the PostgreSQL URL without its
    /// password.
    public var databaseDescription: (key: String, value: String) {
        configuration.store.engine == .postgres
            ? ("postgres", PostgresURL.redacted(configuration.store.postgresURL))
            : ("path", configuration.store.dataDirectory + "/switchboard.sqlite3")
    }

    /// The schema version the store is at.
    public var schemaVersion: Int { database.migratedVersion }

    /// Where it listens (`host:port`, the real port when 0 was configured), once listening.
    public var address: String { server.localAddress?.description ?? "" }

    /// Binds the listening sockets and starts the HTTP loops; returns the bound address.
    /// Requests are answered from here on; the background work starts with `run()`.
    @discardableResult
    public func listen() throws(StartError) -> String {
        do {
            let address = try server.start().description
            do {
                _ = try operatorServer?.start()
            } catch {
                server.stopNow()
                throw StartError(step: "cannot listen on operatorListen", underlying: error)
            }
            return address
        } catch let error as StartError {
            database.close()
            throw error
        } catch {
            database.close()
            throw StartError(step: "cannot listen", underlying: error)
        }
    }

    /// Where the operator listener listens, once listening; empty without one.
    public var operatorAddress: String { operatorServer?.localAddress?.description ?? "" }

    /// The long-running parts, in start order. The HTTP listener is last: on a stop it is the
    /// first to go (answering held long polls, draining requests for the shutdown grace), then
    /// the background work (sweeps, push dispatch, checkpoints), then the push provider.
    public var services: [ServiceGroup.Entry] {
        [
            ("push channels", PushChannelsService(directory: application.dispatcher.directory)),
            ("background work", BackgroundWork(application: application)),
            (
                "http",
                HTTPListener(
                    servers: [server] + (operatorServer.map { [$0] } ?? []), application: application,
                    grace: .seconds(configuration.http.shutdownGraceSeconds))
            ),
        ]
    }

    /// Runs the services (listening first if `listen()` was not called) until one of
    /// `stopSignals` arrives, the calling task is cancelled, or a service fails; then stops them
    /// in reverse order and closes the database. Throws the failure, if any.
    /// `didStart` is told when the stop signals are handled and the services run.
    public func run(
        stopSignals: [Int32] = [], didStart: @escaping @Sendable () -> Void = {},
        willStop: @escaping @Sendable (ServiceGroup.StopReason) -> Void = { _ in }
    ) async throws {
        if server.localAddress == nil { try listen() }
        defer { database.close() }
        try await ServiceGroup(services, stopSignals: stopSignals, didStart: didStart, willStop: willStop).run()
    }

    /// For in-process use (the demo, the wake-up bench): listens and runs in the background
    /// until `stop()`.
    public func start() throws(StartError) {
        try listen()
        let task = Task { try await self.run() }
        background.withLock { $0 = task }
    }

    /// Stops what `start()` started: answers held long polls, drains requests for up to the
    /// configured grace, stops the background work and the push provider, closes the database.
    public func stop() async {
        guard let task = background.withLock({ $0 }) else { return }
        task.cancel()
        _ = try? await task.value
    }
}

/// The HTTP listener as a service: it serves from `listen()` on; asked to stop, it answers the
/// held long polls and drains for up to `grace`.
private struct HTTPListener: Service {
    let servers: [HTTPServer]
    let application: Application
    let grace: Duration

    func run() async throws {
        await waitUntilCancelled()
        application.store.hub.closeAll()
        // Outside the cancelled task, so the drain gets its full grace.
        await runToCompletion { [servers, grace] in
            for server in servers { await server.shutdown(gracePeriod: grace) }
        }
    }
}

/// The application's background work (sweeps, push dispatch, checkpoints, retention).
private struct BackgroundWork: Service {
    let application: Application
    func run() async throws { await application.run() }
}

/// The push channels' connections (the server's and the gateway apps'), shut down once the
/// dispatcher has stopped.
private struct PushChannelsService: Service {
    let directory: any PushChannelDirectory
    func run() async throws {
        await waitUntilCancelled()
        await runToCompletion { [directory] in await directory.shutdown() }
    }
}
