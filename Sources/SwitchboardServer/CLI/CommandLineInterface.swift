import Foundation
import SwitchboardCLI
import SwitchboardStore

/// The `switchboard` command line: subcommands, flags and help.
public enum CommandLineInterface {
    /// The program's version.
    public static let version = "0.1.0"

    /// The program's commands and their help: the overview, `help COMMAND` and
    /// `COMMAND --help` all come from this table.
    static var program: CommandLineProgram {
        CommandLineProgram(
            name: "switchboard", version: version,
            summary: "switchboard — a self-hosted calling backend: signaling server, event stream, VoIP push.",
            footer: """
                The developer tools (demo, bench wakeup, proxy, push-emulator) are in a second binary,
                switchboard-dev, built beside this one: switchboard-dev --help.
                """,
            commands: [
                .init(
                    "serve", summary: "Run the server (HTTP API, event stream, timers, push delivery).", help: serveHelp
                ),
                .init(
                    "backup", summary: "Copy the embedded SQLite database to a file, while the server runs.",
                    help: backupHelp),
                .init(
                    "copy-to-postgres", summary: "Copy the embedded SQLite database into an empty PostgreSQL one.",
                    help: copyHelp),
            ],
            elsewhere: Dictionary(
                uniqueKeysWithValues: developerTools.map { tool in
                    (
                        tool,
                        "it is a developer tool, in switchboard-dev beside this binary.\nRun 'switchboard-dev \(tool)'."
                    )
                }))
    }

    /// The overview (`switchboard --help`).
    static var overview: String { program.overview }

    /// The commands of `switchboard-dev`, named in the hint when one is asked of this binary.
    static let developerTools: Set<String> = ["demo", "bench", "proxy", "apns-emulator", "push-emulator"]

    static var serveHelp: String {
        var text = """
            Usage: switchboard serve [--listen HOST:PORT] [--data-dir DIR] [--config FILE] [--log-level LEVEL]
                                     [--operator-listen HOST:PORT]

            Runs the server until SIGTERM or SIGINT, then stops accepting, lets requests in
            flight finish (up to the shutdown grace) and exits 0. With port 0 the kernel picks
            a free port; the first line on standard output is a JSON log line with
            "msg":"listening" and the bound "address".

            Options:
              --listen HOST:PORT   address to listen on (default 127.0.0.1:8080)
              --data-dir DIR       directory for the SQLite database (default ./var)
              --config FILE        JSON configuration file (also: \(ServerConfiguration.configFileEnvironment))
              --log-level LEVEL    debug, info, warning or error (default info)
              --operator-listen HOST:PORT
                                   a second listener for /metrics and /admin/* only (default none)
              -h, --help           show this help

            Settings (config file key, environment variable: meaning). Flags override the
            environment, which overrides the file:

            """
        for setting in ConfigurationSetting.all {
            text += "  \(setting.key), \(setting.environment): \(setting.help)\n"
        }
        return text
    }

    static let backupHelp = """
        Usage: switchboard backup --to FILE [--data-dir DIR]

        Writes a consistent copy of the embedded SQLite database (DIR/switchboard.sqlite3) to
        FILE, while the server goes on serving: SQLite's VACUUM INTO reads one snapshot, so
        writes made meanwhile are simply not in the copy. FILE must not exist. To restore, stop
        the server, put FILE in place of DIR/switchboard.sqlite3 (removing any
        switchboard.sqlite3-wal and -shm beside it) and start it. On PostgreSQL use pg_dump.

        Options:
          --to FILE            where the copy goes (a new file)
          --data-dir DIR       the server's data directory (default ./var; also SWITCHBOARD_DATA_DIR)
          -h, --help           show this help

        Exit status: 0 written, 1 the backup failed (no file left), 2 bad usage.
        """

    static let copyHelp = """
        Usage: switchboard copy-to-postgres [--data-dir DIR] [--postgres-url URL]

        Copies the embedded SQLite database (DIR/switchboard.sqlite3) into an empty PostgreSQL
        database, to move a server onto PostgreSQL without losing data: every row keeps its
        ids, so clients' event cursors stay valid. Both databases are first brought to this
        build's schema. It runs in one PostgreSQL transaction: on any failure nothing is copied.
        The target must hold no user. Stop the server first, so nothing is written meanwhile;
        then start it with database postgres.

        Options:
          --data-dir DIR       the SQLite server's data directory (default ./var; also SWITCHBOARD_DATA_DIR)
          --postgres-url URL   the PostgreSQL connection string (also SWITCHBOARD_POSTGRES_URL)
          -h, --help           show this help

        Exit status: 0 copied, 1 the copy failed (nothing copied), 2 bad usage.
        """

    /// Runs the command line and returns the exit status.
    public static func run(
        _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment
    ) async -> Int32 {
        let command: String, rest: [String]
        switch program.resolve(Array(arguments.dropFirst())) {
        case .print(let text, let status):
            print(text)
            return status
        case .fail(let message):
            printError(message)
            return 2
        case .run(let name, let arguments):
            (command, rest) = (name, arguments)
        }
        switch command {
        case "serve":
            do {
                // Every setting's flag, from the one table the help is made from, and --config.
                let flags = try parseFlags(
                    rest, known: Set(ConfigurationSetting.all.compactMap(\.flag)).union(["--config"]))
                let configPath = flags["--config"] ?? environment[ServerConfiguration.configFileEnvironment]
                var file: (path: String, contents: Data)?
                if let configPath {
                    guard let contents = FileManager.default.contents(atPath: configPath) else {
                        throw ConfigurationError(message: "cannot read configuration file \(configPath)")
                    }
                    file = (configPath, contents)
                }
                let configuration = try ServerConfiguration.resolve(flags: flags, environment: environment, file: file)
                return await ServeCommand(
                    configuration: configuration, warnings: ServerConfiguration.unknownEnvironmentWarnings(environment)
                ).run()
            } catch let error as UsageError {
                printError(error.message + "\nRun 'switchboard serve --help' for usage.")
                return 2
            } catch {
                printError("configuration: \(error)")
                return 2
            }
        case "backup":
            let flags: [String: String]
            do {
                flags = try parseFlags(rest, known: ["--data-dir", "--to"])
            } catch {
                printError(error.message + "\nRun 'switchboard backup --help' for usage.")
                return 2
            }
            guard let target = flags["--to"], !target.isEmpty else {
                printError("backup needs --to FILE\nRun 'switchboard backup --help' for usage.")
                return 2
            }
            let directory =
                flags["--data-dir"] ?? environment["SWITCHBOARD_DATA_DIR"] ?? ServerConfiguration().store.dataDirectory
            do {
                let bytes = try StoreBackup.write(sqlitePath: directory + "/switchboard.sqlite3", to: target)
                print("backed up \(directory)/switchboard.sqlite3 to \(target) (\(bytes) bytes)")
                return 0
            } catch {
                printError("backup: \(error)")
                return 1
            }
        case "copy-to-postgres":
            let flags: [String: String]
            do {
                flags = try parseFlags(rest, known: ["--data-dir", "--postgres-url"])
            } catch {
                printError(error.message + "\nRun 'switchboard copy-to-postgres --help' for usage.")
                return 2
            }
            let directory =
                flags["--data-dir"] ?? environment["SWITCHBOARD_DATA_DIR"] ?? ServerConfiguration().store.dataDirectory
            guard let url = flags["--postgres-url"] ?? environment["SWITCHBOARD_POSTGRES_URL"], !url.isEmpty else {
                printError(
                    "copy-to-postgres needs --postgres-url (or SWITCHBOARD_POSTGRES_URL)\nRun 'switchboard copy-to-postgres --help' for usage."
                )
                return 2
            }
            do {
                let copied = try StoreCopy.copy(sqlitePath: directory + "/switchboard.sqlite3", postgresURL: url)
                for (table, rows) in copied { print("\(table): \(rows) row(s)") }
                print(
                    "copied \(copied.reduce(0) { $0 + $1.rows }) row(s) from \(directory)/switchboard.sqlite3 to \(PostgresURL.redacted(url))"
                )
                return 0
            } catch {
                printError("copy-to-postgres: nothing was copied: \(error)")
                return 1
            }
        default:
            printError(program.unknown(command))
            return 2
        }
    }

    /// Parses `--flag value` and `--flag=value` for the `known` flags; anything else is a usage error.
    static func parseFlags(_ arguments: [String], known: Set<String>) throws(UsageError) -> [String: String] {
        var flags: [String: String] = [:]
        var scanner = ArgumentScanner(arguments)
        while let flag = scanner.nextFlag() {
            guard known.contains(flag) else { throw scanner.unknown(flag) }
            flags[flag] = try scanner.value(for: flag)
        }
        return flags
    }

    static func printError(_ message: String) {
        FileHandle.standardError.write(Data("switchboard: \(message)\n".utf8))
    }
}
