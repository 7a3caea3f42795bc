import Foundation
import Glibc
import Synchronization

/// One process per SQLite database: an exclusive `flock` on `<database>.lock`, held from open
/// to close, with the holder's process id written in it, so a second server on the same data
/// directory stops at once and names the first (instead of taking over its push jobs).
///
/// Within one process, opens of the same database share the lock (counted): it guards against
/// another process, and a process that opens its own database twice (a tool, a test that reopens
/// before the first instance is freed) is not another server. The kernel releases the lock when
/// the process ends, however it ends: a stale lock file never blocks a restart.
final class DatabaseFileLock: Sendable {
    /// The lock file's path (the registry's key).
    private let path: String
    private let released = Atomic<Bool>(false)

    /// This process's held lock files: their descriptors and how many opens share each.
    private static let held = Mutex<[String: (fd: Int32, count: Int)]>([:])

    /// Takes the lock next to `databasePath` (or shares this process's hold on it), or throws
    /// ``StoreError`` (`.locked`) naming the process that holds it.
    init(databasePath: String) throws {
        let path = URL(fileURLWithPath: databasePath + ".lock").standardizedFileURL.path
        self.path = path
        try Self.held.withLock { held in
            if let entry = held[path] {
                held[path] = (entry.fd, entry.count + 1)
                return
            }
            held[path] = (try Self.lock(path, databasePath: databasePath), 1)
        }
    }

    private static func lock(_ path: String, databasePath: String) throws -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StoreError(code: .io, message: "cannot open \(path): \(describe(errno))")
        }
        // A lock just let go can still look held for a moment: a process this one is spawning
        // holds a copy of every descriptor between its fork and its exec (O_CLOEXEC closes them
        // only at the exec), and so holds the lock's open file too. Such a copy goes within
        // milliseconds; another server holding the lock does not. So a refusal is asked again
        // for up to two seconds before it is reported.
        var tries = 0
        while flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK && tries < 100 {
            tries += 1
            usleep(20_000)
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(fd, &buffer, buffer.count, 0)
            close(fd)
            guard code == EWOULDBLOCK else {
                throw StoreError(code: .io, message: "cannot lock \(path): \(describe(code))")
            }
            let holder =
                count > 0
                ? String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                : ""
            throw StoreError(
                code: .locked,
                message:
                    "the database \(databasePath) is in use by another process\(holder.isEmpty ? "" : " (pid \(holder))"): "
                    + "one server per SQLite data directory; stop it, or give this one another dataDir")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        return fd
    }

    /// Lets go of this open's share (the database was closed); the last share unlocks. Later
    /// calls do nothing.
    func release() {
        guard !released.exchange(true, ordering: .relaxed) else { return }
        Self.held.withLock { held in
            guard let entry = held[path] else { return }
            if entry.count > 1 {
                held[path] = (entry.fd, entry.count - 1)
            } else {
                close(entry.fd)
                held[path] = nil
            }
        }
    }

    deinit { release() }

    static func describe(_ code: Int32) -> String {
        String(cString: strerror(code)).lowercased()
    }
}
