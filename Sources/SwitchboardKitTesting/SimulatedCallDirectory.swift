import Foundation
import SwitchboardKit

/// The system's Call Directory database for one extension, with CallKit's rules enforced: a
/// request's entries are staged and become the database only when the request completes
/// without a fault, as iOS does.
///
/// Faults are what iOS refuses (`CXErrorCodeCallDirectoryManagerError`): additions of a kind out
/// of ascending order (`entriesOutOfOrder`), a number added that is already there
/// (`duplicateEntries`), removals in a full request (`unexpectedIncrementalRemoval`); and what
/// would go wrong unseen: a number outside E.164, removing a number that is not there.
public final class SimulatedCallDirectory: Sendable {
    public struct Database: Sendable, Equatable {
        public var blocking: Set<Int64> = []
        public var labels: [Int64: String] = [:]
        public init() {}

        /// The entries in the SDK's form, to compare with what the server lists.
        public func contents(userID: String = "", version: Int64 = 0) -> CallDirectoryContents {
            CallDirectoryContents(
                userID: userID, version: version, blocking: Array(blocking),
                identification: labels.map { CallDirectoryIdentification(number: $0.key, label: $0.value) })
        }
    }

    private struct State {
        var database = Database()
        /// Whether the system holds data from an earlier request (what `isIncremental` says).
        var holdsData = false
        var requests = 0
    }

    private let state = LockedState(State())

    public init() {}

    /// What the system holds now.
    public var database: Database { state.withLock { $0.database } }
    /// Completed requests so far.
    public var completedRequests: Int { state.withLock { $0.requests } }

    /// The system drops the extension's data (the user toggled it in Settings, or iOS reset
    /// the database): the next request is not incremental.
    public func reset() {
        state.withLock {
            $0.database = Database()
            $0.holdsData = false
        }
    }

    /// A new request, as the system starts one when the app reloads the extension.
    public func beginRequest() -> Context {
        state.withLock { Context(directory: self, isIncremental: $0.holdsData, base: $0.database) }
    }

    fileprivate func commit(_ database: Database) {
        state.withLock {
            $0.database = database
            $0.holdsData = true
            $0.requests += 1
        }
    }

    /// One request's context: the `CXCallDirectoryExtensionContext` of the simulation.
    public final class Context: CallDirectoryEntrySink, Sendable {
        public let isIncremental: Bool
        private let directory: SimulatedCallDirectory
        private let staged: LockedState<(database: Database, lastBlocking: Int64?, lastLabel: Int64?, faults: [String])>

        fileprivate init(directory: SimulatedCallDirectory, isIncremental: Bool, base: Database) {
            self.directory = directory
            self.isIncremental = isIncremental
            staged = LockedState((isIncremental ? base : Database(), nil, nil, []))
        }

        /// What this request did wrong so far (empty: iOS would accept it).
        public var faults: [String] { staged.withLock { $0.faults } }

        /// Completes the request: without faults the staged entries become the database and
        /// true is answered; with any, nothing changes (iOS fails the request) and false is.
        @discardableResult
        public func complete() -> Bool {
            let (database, faults) = staged.withLock { ($0.database, $0.faults) }
            guard faults.isEmpty else { return false }
            directory.commit(database)
            return true
        }

        public func addBlockingEntry(withNextSequentialPhoneNumber phoneNumber: Int64) {
            staged.withLock {
                if let last = $0.lastBlocking, phoneNumber <= last {
                    $0.faults.append("blocking \(phoneNumber) added after \(last)")
                }
                if !CallDirectoryNumber.range.contains(phoneNumber) {
                    $0.faults.append("blocking \(phoneNumber) is no E.164 number")
                }
                if !$0.database.blocking.insert(phoneNumber).inserted {
                    $0.faults.append("blocking \(phoneNumber) added twice")
                }
                $0.lastBlocking = phoneNumber
            }
        }

        public func addIdentificationEntry(withNextSequentialPhoneNumber phoneNumber: Int64, label: String) {
            staged.withLock {
                if let last = $0.lastLabel, phoneNumber <= last {
                    $0.faults.append("identification \(phoneNumber) added after \(last)")
                }
                if !CallDirectoryNumber.range.contains(phoneNumber) {
                    $0.faults.append("identification \(phoneNumber) is no E.164 number")
                }
                if $0.database.labels.updateValue(label, forKey: phoneNumber) != nil {
                    $0.faults.append("identification \(phoneNumber) added twice")
                }
                $0.lastLabel = phoneNumber
            }
        }

        public func removeBlockingEntry(withPhoneNumber phoneNumber: Int64) {
            staged.withLock {
                if !isIncremental { $0.faults.append("blocking \(phoneNumber) removed in a full request") }
                if $0.database.blocking.remove(phoneNumber) == nil {
                    $0.faults.append("blocking \(phoneNumber) removed but not there")
                }
            }
        }

        public func removeIdentificationEntry(withPhoneNumber phoneNumber: Int64) {
            staged.withLock {
                if !isIncremental { $0.faults.append("identification \(phoneNumber) removed in a full request") }
                if $0.database.labels.removeValue(forKey: phoneNumber) == nil {
                    $0.faults.append("identification \(phoneNumber) removed but not there")
                }
            }
        }

        public func removeAllBlockingEntries() {
            staged.withLock {
                if !isIncremental { $0.faults.append("all blocking entries removed in a full request") }
                $0.database.blocking = []
            }
        }

        public func removeAllIdentificationEntries() {
            staged.withLock {
                if !isIncremental { $0.faults.append("all identification entries removed in a full request") }
                $0.database.labels = [:]
            }
        }
    }
}
