import Foundation

/// `switchboard backup`: a consistent copy of the embedded SQLite database, made while the
/// server runs (`VACUUM INTO` reads one snapshot; the server's lock is not needed to read).
package enum StoreBackup {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String

        package init(description: String) {
            self.description = description
        }
    }

    /// Writes the copy of the database at `sqlitePath` to `target` (a new file) and returns its
    /// size in bytes; on failure no file is left.
    package static func write(sqlitePath: String, to target: String) throws -> Int {
        guard FileManager.default.fileExists(atPath: sqlitePath) else {
            throw Failure(description: "there is no database at \(sqlitePath)")
        }
        guard !FileManager.default.fileExists(atPath: target) else {
            throw Failure(description: "\(target) exists: the backup goes to a new file")
        }
        var configuration = DatabaseConfiguration(path: sqlitePath, readerCount: 1)
        configuration.exclusive = false
        let database = try Database(configuration: configuration, migrations: Schema.migrations)
        defer { database.close() }
        do {
            try database.vacuum(into: target)
        } catch {
            try? FileManager.default.removeItem(atPath: target)
            throw error
        }
        return (try? FileManager.default.attributesOfItem(atPath: target)[.size] as? Int) ?? 0
    }
}
