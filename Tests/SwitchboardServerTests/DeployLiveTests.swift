import Foundation
import SwitchboardStore
import SwitchboardTesting
@testable import SwitchboardServer
import Testing

/// From a clone to production: one writer per SQLite database, data-directory problems in plain
/// words, a PostgreSQL URL that cannot be half configured, and readiness that tells the truth.
@Suite("Deployment: one writer, plain errors, honest readiness", .serialized, .timeLimit(.minutes(3)))
struct DeployLiveTests {
    /// `switchboard serve` with `arguments` and `environment`, its standard output and error
    /// together; killed after 30 s should it not stop by itself.
    private static func serveOutput(
        _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> (status: Int32, output: String) {
        let assignments = environment.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
        let quoted = arguments.map { "'\($0)'" }.joined(separator: " ")
        return try await ProcessLauncher.output(
            of: "/bin/sh",
            ["-c", "exec env \(assignments) timeout 30 '\(Executable.server.path)' serve \(quoted) 2>&1"])
    }

    @Test func aSecondServerOnTheSameDataDirectoryStopsAtOnceAndNamesTheFirst() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let first = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15"])
        defer { _ = first.stop() }
        let second = try await Self.serveOutput(["--listen", "127.0.0.1:0", "--data-dir", data.path])
        #expect(second.status != 0 && second.status != 124, "it stopped by itself: \(second.status)")
        #expect(
            second.output.contains("in use by another process (pid \(first.process.processIdentifier))"),
            "\(second.output)")
        #expect(await fetch(first.address, "GET", "/readyz").status == 200, "the first one serves on")
        _ = first.stop()
        // Once the first is gone, the directory is free again (the kernel dropped its lock).
        let third = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15"])
        #expect(await fetch(third.address, "GET", "/healthz").status == 200)
        _ = third.stop()
    }

    @Test func aBackupMadeWhileTheServerRunsRestoresIntoAServerThatKnowsItsUsers() async throws {
        let data = ScratchDirectory(), restored = ScratchDirectory()
        defer {
            data.remove()
            restored.remove()
        }
        let environment = ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15"]
        let running = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path], environment: environment)
        defer { _ = running.stop() }
        _ = try await liveRegister(running.address, "keeper")
        let file = restored.path + "/switchboard.sqlite3"
        let backup = try await ProcessLauncher.output(
            of: Executable.server.path, ["backup", "--data-dir", data.path, "--to", file])
        #expect(backup.status == 0, "\(backup.output)")
        #expect(backup.output.contains("backed up"))
        let again = try await ProcessLauncher.output(
            of: Executable.server.path, ["backup", "--data-dir", data.path, "--to", file])
        #expect(again.status == 1, "a backup never overwrites a file")
        _ = running.stop()
        let second = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", restored.path], environment: environment)
        defer { _ = second.stop() }
        let login = await fetch(
            second.address, "POST", "/auth/login", body: #"{"username":"keeper","password":"long enough"}"#)
        #expect(login.status == 200, "\(login.body)")
    }

    @Test func dataDirectoryAndPostgresMistakesAreSaidInPlainWords() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        // A file where a directory should be.
        try "x".write(toFile: data.path + "/occupied", atomically: true, encoding: .utf8)
        let blocked = try await Self.serveOutput(["--listen", "127.0.0.1:0", "--data-dir", data.path + "/occupied/var"])
        #expect(blocked.status != 0 && blocked.status != 124)
        #expect(
            blocked.output.contains("cannot create \(data.path)/occupied/var: not a directory for user")
                || blocked.output.contains("\(data.path)/occupied is a file, not a directory"), "\(blocked.output)")
        #expect(!blocked.output.contains("NSCocoaErrorDomain"), "\(blocked.output)")
        // A PostgreSQL URL without database postgres.
        let half = try await Self.serveOutput(
            ["--listen", "127.0.0.1:0", "--data-dir", data.path + "/var"],
            environment: ["SWITCHBOARD_POSTGRES_URL": "postgresql://u:p@127.0.0.1:1/db"])
        #expect(half.status != 0 && half.status != 124)
        #expect(
            half.output.contains("postgresURL (SWITCHBOARD_POSTGRES_URL) is set but database is sqlite"),
            "\(half.output)")
        #expect(
            !FileManager.default.fileExists(atPath: data.path + "/var/switchboard.sqlite3"),
            "no SQLite database was made instead")
    }
}

@Suite("Readiness", .timeLimit(.minutes(2)))
struct ReadinessTests {
    @Test(arguments: StoreKind.allCases)
    func aWritableMigratedStoreIsReady(store: StoreKind) async throws {
        let app = try TestApplication(store: store)
        defer { app.close() }
        let ready = await app.request("GET", "/readyz")
        #expect(ready.status == 200, "\(ready.text)")
        let body = try #require(ready.json)
        #expect(body["status"] as? String == "ready" && body["database"] as? String == "ok")
        let expected = (store == .postgres ? PostgresSchema.migrations : Schema.migrations).last?.version
        #expect(body["schemaVersion"] as? Int == expected && body["expectedSchemaVersion"] as? Int == expected)
    }

    @Test func aReadOnlyDatabaseIsNotReadyAndSaysWhyWhileLivenessHolds() async throws {
        let app = try TestApplication(store: .sqlite)
        defer { app.close() }
        #expect(await app.request("GET", "/readyz").status == 200)
        let database = try #require(app.application.database as? Database)
        // The writer refuses every write from now on, as on a read-only file or mount.
        _ = try await database.write { try $0.execute("PRAGMA query_only = 1") }
        #expect(await eventually { await app.request("GET", "/readyz").status == 503 })
        let body = try #require(await app.request("GET", "/readyz").json)
        #expect(body["status"] as? String == "not_ready")
        #expect((body["reason"] as? String)?.contains("read-only") == true, "\(body)")
        #expect(await app.request("GET", "/healthz").status == 200, "liveness: the process still reads")
    }
}
