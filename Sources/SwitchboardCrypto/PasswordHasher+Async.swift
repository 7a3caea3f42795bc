extension PasswordHasher {
    /// Hashes `password` like the synchronous `hash(_:)`, but on a dedicated serial queue so the
    /// cooperative thread pool is never blocked; at most two scrypt computations run at once
    /// process-wide, later calls wait their turn.
    ///
    /// ```swift
    /// let stored = try await PasswordHasher().hash(password)
    /// ```
    public func hash(_ password: String) async throws -> String {
        try await ScryptWorkers.shared.run { try self.hash(password) }
    }

    /// Verifies `password` like the synchronous `verify(_:against:)` (same results and errors),
    /// but on a dedicated serial queue; at most two scrypt computations run at once process-wide.
    public func verify(_ password: String, against stored: String) async throws -> Bool {
        try await ScryptWorkers.shared.run { try self.verify(password, against: stored) }
    }
}
