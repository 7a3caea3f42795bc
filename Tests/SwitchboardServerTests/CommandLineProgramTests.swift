import SwitchboardCLI
@testable import SwitchboardServer
import Testing

/// The one way both binaries read a command line, on the server's own table.
@Suite("Command lines and their help, from one table", .timeLimit(.minutes(1)))
struct CommandLineProgramTests {
    let program = CommandLineProgram(
        name: "tool", version: "1.2.3", summary: "tool — does things.", footer: "See also other-tool.",
        commands: [
            .init("run", summary: "Run it.", help: "Usage: tool run [--fast]"),
            .init("bench", help: "Usage: tool bench <a|b>", listed: false),
            .init("bench a", summary: "Bench a.", help: "Usage: tool bench a"),
            .init("emulate", aliases: ["emu"], summary: "Emulate.", help: "Usage: tool emulate"),
        ],
        elsewhere: ["serve": "the server is 'server serve'."])

    @Test func theOverviewListsEveryListedCommandThenVersionAndHelp() {
        let overview = program.overview
        for row in ["\n  run ", "\n  bench a ", "\n  emulate ", "\n  version ", "\n  help "] {
            #expect(overview.contains(row), "\(row)")
        }
        #expect(
            !overview.split(separator: "\n").contains { $0.hasPrefix("  bench ") && !$0.hasPrefix("  bench a ") },
            "a group whose subcommands are listed is not")
        #expect(overview.contains("Emulate (also: emu).") && overview.hasSuffix("See also other-tool."))
    }

    @Test func helpAndDashDashHelpAndVersionMeanTheSameEverywhere() {
        #expect(program.resolve([]) == .print(program.overview, status: 2))
        #expect(program.resolve(["--help"]) == .print(program.overview, status: 0))
        #expect(program.resolve(["help", "run"]) == .print("Usage: tool run [--fast]", status: 0))
        #expect(program.resolve(["run", "--help"]) == .print("Usage: tool run [--fast]", status: 0))
        #expect(program.resolve(["help", "bench", "a"]) == .print("Usage: tool bench a", status: 0))
        #expect(program.resolve(["bench", "a", "-h"]) == .print("Usage: tool bench a", status: 0))
        #expect(program.resolve(["help", "bench"]) == .print("Usage: tool bench <a|b>", status: 0))
        #expect(program.resolve(["help", "emu"]) == .print("Usage: tool emulate", status: 0))
        #expect(program.resolve(["version"]) == .print("tool 1.2.3", status: 0))
        #expect(program.resolve(["version", "--help"]) == .print(program.versionHelp, status: 0))
        #expect(program.resolve(["help", "version"]) == .print(program.versionHelp, status: 0))
        #expect(program.resolve(["help", "help"]) == .print(program.helpHelp, status: 0))
    }

    @Test func commandsRunWithTheArgumentsAfterTheirWords() {
        #expect(program.resolve(["run", "--fast"]) == .run(command: "run", arguments: ["--fast"]))
        #expect(program.resolve(["bench", "a", "--x", "1"]) == .run(command: "bench a", arguments: ["--x", "1"]))
        #expect(program.resolve(["bench", "c"]) == .run(command: "bench", arguments: ["c"]))
        #expect(program.resolve(["emu"]) == .run(command: "emulate", arguments: []))
    }

    @Test func unknownCommandsFailWithAHint() {
        #expect(program.resolve(["frobnicate"]) == .fail("unknown command 'frobnicate'\nRun 'tool --help' for usage."))
        #expect(
            program.resolve(["help", "frobnicate"])
                == .fail("unknown command 'frobnicate'\nRun 'tool --help' for usage."))
        #expect(program.resolve(["serve"]) == .fail("unknown command 'serve': the server is 'server serve'."))
    }

    @Test func theServersOwnTableHasEveryCommandsHelp() {
        let server = CommandLineInterface.program
        for command in ["serve", "backup", "copy-to-postgres"] {
            guard case .print(let text, 0) = server.resolve(["help", command]) else {
                Issue.record("no help for \(command)")
                continue
            }
            #expect(text.hasPrefix("Usage: switchboard \(command)"))
        }
    }
}
