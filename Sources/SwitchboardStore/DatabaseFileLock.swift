import Foundation
import Glibc
import Synchronization

/// One process per SQLite database: an exclusive `flock` on `<database>.lock`, held from open
/// to close, with the holder's process id written in it, so a second server on the same data
/// directory stops at once and names the first (instead of taking over its push jobs).
///
/// The kernel releases the lock when the process ends, however it ends: a stale lock file
/// never blocks a restart.
final class DatabaseFileLock: Sendable {
    /// The lock file's descriptor while held; -1 once released.
    private let fd: Mutex<Int32>

    /// Takes the lock next to `databasePath`, or throws ``StoreError`` (`.locked`) naming the
    /// process that holds it.
    init(databasePath: String) throws {
        let path = databasePath + ".lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StoreError(code: .io, message: "cannot open \(path): \(DatabaseFileLock.describe(errno))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(fd, &buffer, buffer.count, 0)
            close(fd)
            guard code == EWOULDBLOCK else {
                throw StoreError(code: .io, message: "cannot lock \(path): \(DatabaseFileLock.describe(code))")
            }
            let holder = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
            throw StoreError(
                code: .locked,
                message: "the database \(databasePath) is in use by another process\(holder.isEmpty ? "" : " (pid \(holder))"): "
                    + "one server per SQLite data directory; stop it, or give this one another dataDir")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(fd, 0)
        _ = pwrite(fd, pid, pid.count, 0)
        self.fd = Mutex(fd)
    }

    /// Lets go of the lock (the database was closed); later calls do nothing.
    func release() {
        fd.withLock { fd in
            if fd >= 0 { close(fd) }
            fd = -1
        }
    }

    deinit { release() }

    static func describe(_ code: Int32) -> String {
        String(cString: strerror(code)).lowercased()
    }
}
