import Foundation
@testable import SwitchboardHTTP
import SwitchboardTesting

/// Starts a server on a free loopback port for one test and always shuts it down.
func withServer(
    _ configure: (inout HTTPServerConfiguration) -> Void = { _ in },
    handler: @escaping HTTPHandler,
    _ body: (HTTPServer, Int) async throws -> Void
) async throws {
    var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, loopCount: 2)
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, handler: handler)
    let address = try server.start()
    do {
        try await body(server, address.port)
    } catch {
        await server.shutdown(gracePeriod: .milliseconds(100))
        throw error
    }
    await server.shutdown(gracePeriod: .milliseconds(100))
}
