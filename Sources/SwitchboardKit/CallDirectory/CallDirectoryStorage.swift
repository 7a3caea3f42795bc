import Foundation

/// The two lists the app and its Call Directory extension share: the **current** one (the
/// server's, written by the app's ``CallDirectorySync``) and the **loaded** one (what the system
/// holds after the extension's last completed request, written by ``CallDirectoryLoader``).
/// Each has one writer, so two processes never write the same slot.
public enum CallDirectorySlot: String, Sendable, CaseIterable {
    case current, loaded
}

/// Where the two lists live: shared app-group storage on a phone (``FileCallDirectoryStorage``),
/// memory in tests.
public protocol CallDirectoryStorage: Sendable {
    /// The list in `slot`, or nil when there is none.
    func read(_ slot: CallDirectorySlot) throws(CallDirectorySyncError) -> CallDirectoryContents?
    /// Replaces the list in `slot` (nil removes it) at once: a reader sees the old or the new one.
    func write(_ contents: CallDirectoryContents?, to slot: CallDirectorySlot) throws(CallDirectorySyncError)
}

/// The lists as files in a directory both processes can reach, written atomically (a new file
/// renamed over the old).
///
/// The format is lines of text, read in one pass with little memory beyond the list itself
/// (a Call Directory extension runs under a tight memory limit): a header, the user id, the
/// version, then `b <number>` and `i <number> <label>` lines, ascending. A file that does not
/// parse reads as an error, never as a shorter list.
public struct FileCallDirectoryStorage: CallDirectoryStorage {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    #if canImport(Darwin)
    /// The storage in the app group's container (the app and the extension must both have the
    /// App Groups capability with this identifier); nil when the container is not available.
    public init?(appGroup identifier: String) {
        guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: identifier) else {
            return nil
        }
        self.init(directory: container.appendingPathComponent("SwitchboardCallDirectory", isDirectory: true))
    }
    #endif

    static let header = "switchboard-call-directory 1"

    public func read(_ slot: CallDirectorySlot) throws(CallDirectorySyncError) -> CallDirectoryContents? {
        let url = file(slot)
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let data: Data
        do { data = try Data(contentsOf: url) } catch { throw .storage("cannot read \(url.path): \(error)") }
        return try Self.decode(data, name: url.lastPathComponent)
    }

    public func write(_ contents: CallDirectoryContents?, to slot: CallDirectorySlot) throws(CallDirectorySyncError) {
        let url = file(slot)
        do {
            guard let contents else {
                if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
                return
            }
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Self.encode(contents).write(to: url, options: .atomic)
        } catch {
            throw .storage("cannot write \(url.path): \(error)")
        }
    }

    private func file(_ slot: CallDirectorySlot) -> URL { directory.appendingPathComponent("\(slot.rawValue).txt") }

    static func encode(_ contents: CallDirectoryContents) -> Data {
        var text = "\(header)\n\(oneLine(contents.userID))\n\(contents.version)\n"
        text.reserveCapacity(text.utf8.count + contents.blocking.count * 14 + contents.identification.count * 40)
        for number in contents.blocking { text += "b \(number)\n" }
        for entry in contents.identification { text += "i \(entry.number) \(oneLine(entry.label))\n" }
        return Data(text.utf8)
    }

    static func decode(_ data: Data, name: String) throws(CallDirectorySyncError) -> CallDirectoryContents {
        func corrupt(_ why: String) -> CallDirectorySyncError { .storage("\(name) is damaged: \(why)") }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        guard lines.count >= 4, lines[0] == header, lines.last == "", let version = Int64(lines[2]) else {
            throw corrupt("no header, or cut short")
        }
        var blocking: [Int64] = [], identification: [CallDirectoryIdentification] = []
        for (index, line) in lines.dropFirst(3).dropLast().enumerated() {
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2, let number = Int64(parts[1]), CallDirectoryNumber.range.contains(number) else {
                throw corrupt("line \(index + 4)")
            }
            switch (parts[0], parts.count) {
            case ("b", 2) where blocking.last.map({ $0 < number }) ?? true:
                blocking.append(number)
            case ("i", 3) where identification.last.map({ $0.number < number }) ?? true:
                identification.append(CallDirectoryIdentification(number: number, label: String(parts[2])))
            default:
                throw corrupt("line \(index + 4)")
            }
        }
        var contents = CallDirectoryContents.empty(userID: String(lines[1]))
        contents.version = version
        contents.blocking = blocking
        contents.identification = identification
        return contents
    }

    /// Line breaks would split a line: they become spaces (the server refuses them in labels).
    private static func oneLine(_ text: String) -> String {
        text.contains(where: \.isNewline) ? String(text.map { $0.isNewline ? " " : $0 }) : text
    }
}

/// The lists in memory: tests, previews, an app without an extension.
public final class InMemoryCallDirectoryStorage: CallDirectoryStorage {
    private let slots = LockedState<[CallDirectorySlot: CallDirectoryContents]>([:])

    public init() {}

    public func read(_ slot: CallDirectorySlot) throws(CallDirectorySyncError) -> CallDirectoryContents? {
        slots.withLock { $0[slot] }
    }

    public func write(_ contents: CallDirectoryContents?, to slot: CallDirectorySlot) throws(CallDirectorySyncError) {
        slots.withLock { $0[slot] = contents }
    }
}
