import Foundation
import SwitchboardHTTP
import SwitchboardStore

/// The whole server in this process: database, application, HTTP listener and background
/// work. `switchboard serve` runs one; the demo and the wake-up bench run one beside their
/// simulated phones.
public final class EmbeddedServer: Sendable {
    /// What stopped a start, with the step that failed.
    public struct StartError: Error, CustomStringConvertible {
        public let step: String
        public let underlying: any Error
        public var description: String { "\(step): \(underlying)" }
    }

    /// Where it listens (`host:port`, the real port when 0 was configured).
    public let address: String
    public let application: Application
    let database: Database
    let server: HTTPServer
    let background: Task<Void, Never>
    let configuration: ServerConfiguration

    /// Opens the database under `configuration.dataDirectory`, starts listening and starts the
    /// background work (sweeps, push dispatch, checkpoints).
    public init(configuration: ServerConfiguration, logger: Logger) throws(StartError) {
        self.configuration = configuration
        do {
            database = try Database(
                configuration: DatabaseConfiguration(path: configuration.dataDirectory + "/switchboard.sqlite3"),
                migrations: Schema.migrations)
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
                errorResponder: { status, code, message in APIError(status: status, code: code, message: message).response },
                reportProblem: { problems.report($0) }),
            handler: application.handle)
        self.server = server
        application.metrics.addGauge("switchboard_http_open_connections", help: "Open client connections.") {
            Double(server.openConnectionCount)
        }
        do {
            address = try server.start().description
        } catch {
            database.close()
            throw StartError(step: "cannot listen", underlying: error)
        }
        let application = self.application
        background = Task.detached { await application.run() }
    }

    /// Answers held long polls, drains requests for up to the configured grace, stops the
    /// background work and closes the database.
    public func stop() async {
        application.store.hub.closeAll()
        await server.shutdown(gracePeriod: .seconds(configuration.shutdownGraceSeconds))
        background.cancel()
        await background.value
        database.close()
    }
}
