/// One program's commands and their help, and the one way both binaries read a command line:
/// `PROGRAM --help`, `PROGRAM help [COMMAND…]`, `PROGRAM COMMAND… --help`, `PROGRAM version` and
/// `PROGRAM COMMAND… [options]` mean the same in `switchboard` and `switchboard-dev`, and the
/// overview is made from the same table the commands are found in.
///
/// ```swift
/// let program = CommandLineProgram(name: "switchboard", version: "0.1.0", summary: "…", commands: [
///     .init("serve", summary: "Run the server.", help: "Usage: switchboard serve …"),
/// ])
/// switch program.resolve(Array(CommandLine.arguments.dropFirst())) {
/// case .print(let text, let status): …
/// case .run(let command, let arguments): …
/// case .fail(let message): …
/// }
/// ```
public struct CommandLineProgram: Sendable {
    /// One command: its words (`serve`, `bench wakeup`), other names, the line the overview
    /// shows, and its whole help (starting with its `Usage:` line).
    public struct Command: Sendable {
        public let words: [String]
        public let aliases: [String]
        public let summary: String
        public let help: String
        /// Whether the overview lists it (a group whose subcommands are listed is not).
        public let listed: Bool

        public init(_ name: String, aliases: [String] = [], summary: String = "", help: String, listed: Bool = true) {
            words = name.split(separator: " ").map(String.init)
            self.aliases = aliases
            self.summary = summary
            self.help = help
            self.listed = listed
        }

        /// `serve`, `bench wakeup`.
        public var name: String { words.joined(separator: " ") }
    }

    /// What a command line comes to.
    public enum Resolution: Sendable, Equatable {
        /// Print `text` to standard output and exit with `status`.
        case print(String, status: Int32)
        /// Run `command` (its name) with the arguments after its words.
        case run(command: String, arguments: [String])
        /// Print `message` to standard error (with the program's name before it) and exit 2.
        case fail(String)
    }

    public let name: String
    public let version: String
    /// The overview's first paragraph.
    public let summary: String
    /// The overview's last paragraph (where else to look).
    public let footer: String
    public let commands: [Command]
    /// Names asked of this program that another program has: the hint names it.
    public let elsewhere: [String: String]

    public init(
        name: String, version: String, summary: String, footer: String = "", commands: [Command],
        elsewhere: [String: String] = [:]
    ) {
        self.name = name
        self.version = version
        self.summary = summary
        self.footer = footer
        self.commands = commands
        self.elsewhere = elsewhere
    }

    /// The overview: the summary, the usage line, every command with its summary (then
    /// `version` and `help`), and the footer.
    public var overview: String {
        var rows = commands.filter(\.listed).map { command -> (name: String, summary: String) in
            guard !command.aliases.isEmpty else { return (command.name, command.summary) }
            let also = " (also: \(command.aliases.joined(separator: ", ")))"
            let summary =
                command.summary.hasSuffix(".") ? command.summary.dropLast() + also + "." : command.summary + also
            return (command.name, summary)
        }
        rows.append((name: "version", summary: "Print the version."))
        rows.append((name: "help", summary: "Show a command's help: \(name) help \(commands.first?.name ?? "COMMAND")"))
        let width = max(14, (rows.map(\.name.count).max() ?? 0) + 2)
        var text = "\(summary)\n\nUsage: \(name) <command> [options]\n\nCommands:\n"
        for row in rows {
            if row.name.count + 2 > width {
                text += "  \(row.name)\n  \(String(repeating: " ", count: width))\(row.summary)\n"
            } else {
                text += "  \(row.name)\(String(repeating: " ", count: width - row.name.count))\(row.summary)\n"
            }
        }
        text += "\nRun '\(name) <command> --help' for a command's options."
        if !footer.isEmpty { text += "\n\n" + footer }
        return text
    }

    /// `version`'s own help.
    public var versionHelp: String { "Usage: \(name) version\n\nPrints the version." }

    /// `help`'s own help.
    public var helpHelp: String {
        "Usage: \(name) help [COMMAND]\n\nShows a command's help (the same as '\(name) COMMAND --help'),\nor the list of commands without one."
    }

    /// The command whose words (or an alias) begin `arguments`, the longest such, with how
    /// many words it took.
    public func command(at arguments: [String]) -> (command: Command, taken: Int)? {
        var best: (command: Command, taken: Int)?
        for command in commands {
            for words in [command.words] + command.aliases.map({ $0.split(separator: " ").map(String.init) })
            where arguments.count >= words.count && Array(arguments.prefix(words.count)) == words
                && words.count > (best?.taken ?? 0)
            {
                best = (command, words.count)
            }
        }
        return best
    }

    /// The help for the command named by `words` (or for `version`, `help`); nil when unknown.
    public func help(for words: [String]) -> String? {
        switch words {
        case []: return overview
        case ["version"]: return versionHelp
        case ["help"]: return helpHelp
        default:
            guard let found = command(at: words), found.taken == words.count else { return nil }
            return found.command.help
        }
    }

    /// What `arguments` (without the program's name) come to.
    public func resolve(_ arguments: [String]) -> Resolution {
        guard let first = arguments.first else { return .print(overview, status: 2) }
        let asksHelp = arguments.contains("-h") || arguments.contains("--help")
        switch first {
        case "-h", "--help":
            return .print(overview, status: 0)
        case "help":
            let words = Array(arguments.dropFirst()).filter { $0 != "-h" && $0 != "--help" }
            guard let text = help(for: words) else { return .fail(unknown(words.joined(separator: " "))) }
            return .print(text, status: 0)
        case "version", "--version":
            return .print(asksHelp ? versionHelp : "\(name) \(version)", status: 0)
        default:
            guard let found = command(at: arguments) else { return .fail(unknown(first)) }
            if asksHelp { return .print(found.command.help, status: 0) }
            return .run(command: found.command.name, arguments: Array(arguments.dropFirst(found.taken)))
        }
    }

    /// The message for a command this program does not have, with a hint.
    public func unknown(_ command: String) -> String {
        if let other = elsewhere[command] {
            return "unknown command '\(command)': \(other)"
        }
        return "unknown command '\(command)'\nRun '\(name) --help' for usage."
    }
}
