import Foundation
import Glibc
import SwitchboardCore
import SwitchboardHTTP
import SwitchboardStore

/// `switchboard serve`: opens the database, starts the HTTP server, waits for SIGTERM/SIGINT
/// and shuts down gracefully.
struct ServeCommand {
    let configuration: ServerConfiguration
    /// Said on standard error before the server starts (unknown `SWITCHBOARD_*` variables).
    var warnings: [String] = []

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
        for warning in warnings { startupLogger.warning(warning) }
        let embedded: EmbeddedServer
        do {
            embedded = try EmbeddedServer(configuration: configuration, logger: logger)
        } catch {
            startupLogger.error(error.step, [
                "error": .string(String(describing: error.underlying)), "dataDir": .string(configuration.dataDirectory),
                "listen": .string(configuration.listen.description),
            ])
            return 1
        }
        logger.announce("listening", ["address": .string(embedded.address), "version": .string(CommandLineInterface.version)])
        logger.info("database ready", [
            "path": .string(configuration.dataDirectory + "/switchboard.sqlite3"),
            "schemaVersion": .int(embedded.database.migratedVersion),
        ])
        embedded.application.dispatcher.provider.channel.log(to: logger)

        var received: Int32 = 0
        sigwait(&stopSignals, &received)
        logger.info("shutting down", ["signal": .string(received == SIGTERM ? "SIGTERM" : "SIGINT")])

        // The shutdown is async; run it on the global executor and wait here, off the main actor's
        // executor (this function is not MainActor-isolated, and nothing here needs the main thread).
        // Held long polls answer at once (empty batches), so they do not hold the drain.
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await embedded.stop()
            done.signal()
        }
        done.wait()
        logger.info("stopped")
        return 0
    }
}
