// Wiring only: no loop or C code here. The production server: serve, version, help; the
// developer tools are in switchboard-dev. The one await hands the command line to the global
// executor (top-level code is MainActor-isolated; nothing here needs the main thread).
import Foundation
import SwitchboardServer

exit(await CommandLineInterface.run(CommandLine.arguments))
