import Foundation
import Glibc
import SwitchboardHTTP
import SwitchboardLifecycle
import SwitchboardStore
import SwitchboardObservability

/// `switchboard serve`: opens the database, starts the HTTP server, waits for SIGTERM/SIGINT
/// and shuts down gracefully.
struct ServeCommand {
    let configuration: ServerConfiguration
    /// Said on standard error before the server starts (unknown `SWITCHBOARD_*` variables).
    var warnings: [String] = []

    func run() async -> Int32 {
        let logger = Logger(level: configuration.logLevel)
        let startupLogger = Logger(level: .info, sink: FileDescriptorLogSink.standardError)
        for warning in warnings { startupLogger.warning(warning) }
        let embedded: EmbeddedServer
        do {
            embedded = try EmbeddedServer(configuration: configuration, logger: logger)
            try embedded.listen()
        } catch {
            startupLogger.error(
                error.step,
                [
                    "error": .string(String(describing: error.underlying)),
                    "dataDir": .string(configuration.store.dataDirectory),
                    "listen": .string(configuration.http.listen.description),
                ])
            return 1
        }
        let configuration = self.configuration
        // Until SIGTERM or SIGINT; then the listener drains (held long polls answer at once,
        // with empty batches), the background work and the push provider stop, in that order.
        // `listening` is announced only once those signals are handled, so a script that stops
        // the server right after that line gets the graceful stop (exit 0), never the default
        // action.
        do {
            try await embedded.run(stopSignals: [SIGTERM, SIGINT]) {
                logger.announce(
                    "listening",
                    ["address": .string(embedded.address), "version": .string(CommandLineInterface.version)])
                if !embedded.operatorAddress.isEmpty {
                    logger.info(
                        "operator listener: /metrics and /admin/* are served here only",
                        ["address": .string(embedded.operatorAddress)])
                }
                let place = embedded.databaseDescription
                logger.info(
                    "database ready",
                    [
                        "database": .string(configuration.store.engine.rawValue), place.key: .string(place.value),
                        "schemaVersion": .int(embedded.schemaVersion),
                    ])
                if configuration.media.backend == .relay {
                    logger.info("media: the built-in audio relay", ["path": .string("/calls/{id}/audio")])
                    if configuration.store.engine == .postgres {
                        // Several instances share PostgreSQL: a call's audio sockets must meet on one.
                        logger.info(
                            "several instances with the audio relay: route /calls/{id}/audio by the call (the shipped nginx site hashes the path), so a call's sockets meet on one instance",
                            [:])
                    }
                }
                // One warning per unconfigured service: ios-voip and ios-alert share APNs's.
                var warned: Set<String> = []
                for channel in embedded.application.dispatcher.channels.all {
                    if !channel.summary.configured, !warned.insert(channel.provider).inserted { continue }
                    channel.summary.log(to: logger)
                }
            } willStop: { reason in
                switch reason {
                case .signal(let number):
                    logger.info("shutting down", ["signal": .string(number == SIGTERM ? "SIGTERM" : "SIGINT")])
                case .cancelled:
                    logger.info("shutting down", ["signal": .string("none")])
                case .serviceEnded(let name):
                    logger.error("shutting down: a service ended", ["service": .string(name)])
                }
            }
        } catch {
            logger.error("stopped after a failure", ["error": .string(String(describing: error))])
            return 1
        }
        logger.info("stopped")
        return 0
    }
}
