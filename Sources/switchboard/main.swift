// Wiring only: no loop, C or async code here (top-level code is MainActor-isolated).
// The production server: serve, version, help. The developer tools are in switchboard-dev.
import Foundation
import SwitchboardServer

exit(CommandLineInterface.run(CommandLine.arguments))
