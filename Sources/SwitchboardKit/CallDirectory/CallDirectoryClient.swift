import Foundation

/// The Call Directory API of SPEC §11 as thin methods: read one's merged list (whole or since a
/// version), read and change the entries one listed oneself. To keep a Call Directory
/// extension's data in step with the server use ``CallDirectorySync``.
///
/// ```swift
/// let directory = CallDirectoryClient(client: client)
/// _ = try await directory.change(CallDirectoryChanges(blocking: .init(add: [18005550100])))
/// ```
public struct CallDirectoryClient: Sendable {
    let client: SwitchboardClient

    /// Sends through `client` (its base URL and token).
    public init(client: SwitchboardClient) { self.client = client }

    /// `GET /call-directory`: the whole list (no `since`), or the changes since `since` when the
    /// server still keeps them (`incremental` tells which).
    public func list(since: Int64? = nil) async throws -> CallDirectoryList {
        try await client.call("GET", "/call-directory", query: since.map { [("since", String($0))] } ?? [])
    }

    /// `GET /call-directory/own`: the entries the user listed themselves, not their organisations'.
    public func ownEntries() async throws -> CallDirectoryOwnEntries {
        try await client.call("GET", "/call-directory/own")
    }

    /// `PATCH /call-directory`: adds and removes entries of one's own list, together; answers
    /// the merged list's version after. The same changes sent twice leave the same list, so a
    /// hedging transport may send copies.
    public func change(_ changes: CallDirectoryChanges) async throws -> CallDirectoryVersion {
        try await client.call("PATCH", "/call-directory", body: changes, repeatable: true)
    }
}
