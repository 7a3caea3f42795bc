// Writes a Swift file that declares one constant holding a file's text, or (with --dir) a
// dictionary of every file below a folder, by its path relative to the folder.
// Usage: embed-resource INPUT OUTPUT SYMBOL
//        embed-resource --dir FOLDER OUTPUT SYMBOL
import Foundation

func fail(_ message: String, code: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("embed-resource: \(message)\n".utf8))
    exit(code)
}

/// A file's text, which must be UTF-8 without CR.
func text(of path: String) -> String {
    guard let data = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
    guard let text = String(data: data, encoding: .utf8), !text.contains("\r") else {
        fail("\(path) must be UTF-8 without CR")
    }
    return text
}

/// A raw string literal of `text`: its delimiter has more '#' than any run in the text, so it
/// cannot be closed early, and no escape sequence inside it is interpreted.
func literal(_ text: String) -> String {
    var longestRun = 0
    var run = 0
    for character in text {
        run = character == "#" ? run + 1 : 0
        longestRun = max(longestRun, run)
    }
    let hashes = String(repeating: "#", count: longestRun + 1)
    return "\(hashes)\"\"\"\n\(text)\n\"\"\"\(hashes)"
}

var arguments = Array(CommandLine.arguments.dropFirst())
let folder = arguments.first == "--dir"
if folder { arguments.removeFirst() }
guard arguments.count == 3 else {
    fail("usage: embed-resource [--dir] INPUT OUTPUT SYMBOL", code: 2)
}
let (input, output, symbol) = (arguments[0], arguments[1], arguments[2])
var source: String
if folder {
    let root = URL(fileURLWithPath: input).standardizedFileURL
    guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
    else { fail("cannot read the folder \(input)") }
    var files: [(String, String)] = []
    for case let url as URL in walker
    where (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true {
        let relative = String(url.standardizedFileURL.path.dropFirst(root.path.count + 1))
        if relative.split(separator: "/").contains(where: { $0.hasPrefix(".") }) { continue }
        files.append((relative, text(of: url.path)))
    }
    files.sort { $0.0 < $1.0 }
    source = "// Generated from the files below \(root.lastPathComponent)/; do not edit.\n"
    source += "let \(symbol): [String: String] = [\n"
    for (path, text) in files { source += "    \"\(path)\": \(literal(text)),\n" }
    if files.isEmpty { source += "    :\n" }
    source += "]\n"
} else {
    source = "// Generated from \(URL(fileURLWithPath: input).lastPathComponent); do not edit.\n"
    source += "let \(symbol): String = \(literal(text(of: input)))\n"
}
// An unchanged output is left alone: SwiftPM re-runs this command whenever the build's
// environment changes (any variable), and rewriting the file would recompile the server.
if let existing = FileManager.default.contents(atPath: output), existing == Data(source.utf8) {
    exit(0)
}
do {
    try Data(source.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
} catch {
    fail("cannot write \(output): \(error)")
}
