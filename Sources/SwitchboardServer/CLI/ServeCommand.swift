import Foundation
import Glibc
import SwitchboardCore
import SwitchboardHTTP
import SwitchboardStore

/// `switchboard serve`: opens the database, starts the HTTP server, waits for SIGTERM/SIGINT
/// and shuts down gracefully.
struct ServeCommand {
    let configuration: ServerConfiguration

    func run() -> Int32 {
        // Block the stop signals in this thread before any other thread exists, so every thread
        // inherits the mask and only `sigwait` below receives them.
        var stopSignals = sigset_t()
        sigemptyset(&stopSignals)
        sigaddset(&stopSignals, SIGTERM)
        sigaddset(&stopSignals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &stopSignals, nil)

        let logger = Logger(level: configuration.logLevel)
        let startupLogger = Logger(level: .info, sink: FileDescriptorLogSink.standardError)
        let database: Database
        do {
            database = try Database(
                configuration: DatabaseConfiguration(path: configuration.dataDirectory + "/switchboard.sqlite3"),
                migrations: Schema.migrations)
        } catch {
            startupLogger.error("cannot open the database", ["error": .string(String(describing: error)), "dataDir": .string(configuration.dataDirectory)])
            return 1
        }
        let application: Application
        do {
            application = try Application(configuration: configuration, database: database, logger: logger)
        } catch {
            startupLogger.error("cannot start", ["error": .string(String(describing: error))])
            database.close()
            return 1
        }
        let server = HTTPServer(
            configuration: configuration.httpConfiguration(errorResponder: { status, code, message in
                APIError(status: status, code: code, message: message).response
            }),
            handler: application.handle)
        application.metrics.addGauge("switchboard_http_open_connections", help: "Open client connections.") {
            Double(server.openConnectionCount)
        }
        let address: SocketAddress
        do {
            address = try server.start()
        } catch {
            startupLogger.error("cannot listen", ["error": .string(String(describing: error)), "listen": .string(configuration.listen.description)])
            database.close()
            return 1
        }
        logger.announce("listening", ["address": .string(address.description), "version": .string(CommandLineInterface.version)])
        logger.info("database ready", [
            "path": .string(configuration.dataDirectory + "/switchboard.sqlite3"),
            "schemaVersion": .int(database.migratedVersion),
        ])

        let background = Task.detached { await application.run() }

        var received: Int32 = 0
        sigwait(&stopSignals, &received)
        logger.info("shutting down", ["signal": .string(received == SIGTERM ? "SIGTERM" : "SIGINT")])

        // The shutdown is async; run it on the global executor and wait here, off the main actor's
        // executor (this function is not MainActor-isolated, and nothing here needs the main thread).
        let done = DispatchSemaphore(value: 0)
        let grace = Duration.seconds(configuration.shutdownGraceSeconds)
        // Held long polls answer now (empty batches), so they do not hold the drain for its grace.
        application.store.hub.closeAll()
        Task.detached {
            await server.shutdown(gracePeriod: grace)
            background.cancel()
            await background.value
            done.signal()
        }
        done.wait()
        database.close()
        logger.info("stopped")
        return 0
    }
}
