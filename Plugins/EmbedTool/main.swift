// Writes a Swift file that declares one string constant holding a file's bytes.
// Usage: embed-resource INPUT OUTPUT SYMBOL
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: embed-resource INPUT OUTPUT SYMBOL\n".utf8))
    exit(2)
}
let data: Data
do {
    data = try Data(contentsOf: URL(fileURLWithPath: arguments[1]))
} catch {
    FileHandle.standardError.write(Data("embed-resource: cannot read \(arguments[1]): \(error)\n".utf8))
    exit(1)
}
guard let text = String(data: data, encoding: .utf8), !text.contains("\r") else {
    FileHandle.standardError.write(Data("embed-resource: \(arguments[1]) must be UTF-8 without CR\n".utf8))
    exit(1)
}
// A raw string whose delimiter has more '#' than any run in the text cannot be closed early,
// and no escape sequence inside it is interpreted.
var longestRun = 0
var run = 0
for character in text {
    run = character == "#" ? run + 1 : 0
    longestRun = max(longestRun, run)
}
let hashes = String(repeating: "#", count: longestRun + 1)
var source = "// Generated from \(URL(fileURLWithPath: arguments[1]).lastPathComponent); do not edit.\n"
source += "let \(arguments[3]): String = \(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes)\n"
// An unchanged output is left alone: SwiftPM re-runs this command whenever the build's
// environment changes (any variable), and rewriting the file would recompile the server.
if let existing = FileManager.default.contents(atPath: arguments[2]), existing == Data(source.utf8) {
    exit(0)
}
do {
    try Data(source.utf8).write(to: URL(fileURLWithPath: arguments[2]), options: .atomic)
} catch {
    FileHandle.standardError.write(Data("embed-resource: cannot write \(arguments[2]): \(error)\n".utf8))
    exit(1)
}
