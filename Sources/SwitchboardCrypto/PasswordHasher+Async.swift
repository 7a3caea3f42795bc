extension PasswordHasher {
    /// Hashes `password` like the synchronous `hash(_:)`, but on one of ``workers``' threads so
    /// the cooperative thread pool is never blocked. A new password's hash waits behind every
    /// waiting check (``ScryptWorkers/Priority/later``); throws ``ScryptWorkers/Busy`` at once
    /// when that line is full.
    ///
    /// ```swift
    /// let stored = try await PasswordHasher().hash(password)
    /// ```
    public func hash(_ password: String) async throws -> String {
        try await workers.run(.later) { try self.hash(password) }
    }

    /// Verifies `password` like the synchronous `verify(_:against:)` (same results and errors),
    /// but on one of ``workers``' threads, ahead of every waiting hash
    /// (``ScryptWorkers/Priority/first``); throws ``ScryptWorkers/Busy`` when its line is full.
    public func verify(_ password: String, against stored: String) async throws -> Bool {
        try await workers.run(.first) { try self.verify(password, against: stored) }
    }
}
