#if canImport(AppleFrameworkStubs)  // the tests drive the Linux stubs; Apple platforms have none
import AppleFrameworkStubs
import Foundation
import Synchronization
import Testing
import SwitchboardKit
@testable import SwitchboardCallKit

/// The Call Directory extension's base class over the stub context: what each request gives
/// CallKit (ascending, removals first, none in a full request), and that a list counts as
/// loaded only once the system accepted it; the reloader's retry while CallKit is loading.
@Suite("Call Directory extension", .serialized, .timeLimit(.minutes(1)))
struct CallDirectoryProviderTests {
    // @unchecked Sendable: `storage` is a `let` of a Sendable type and `failures` a `let` Mutex;
    // the base class stores nothing.
    final class Provider: SwitchboardCallDirectoryProvider, @unchecked Sendable {
        let storage: (any CallDirectoryStorage)?
        let failures = Mutex<[String]>([])

        init(storage: (any CallDirectoryStorage)?) { self.storage = storage }

        override func makeStorage() -> (any CallDirectoryStorage)? { storage }
        override func requestDidFail(_ error: any Error) { failures.withLock { $0.append(String(describing: error)) } }
    }

    static func list(_ blocking: [Int64], _ labels: [Int64: String], version: Int64) -> CallDirectoryContents {
        CallDirectoryContents(
            userID: "u1", version: version, blocking: blocking,
            identification: labels.map { .init(number: $0.key, label: $0.value) })
    }

    @Test func aFullRequestAddsEverythingAscendingAndCountsOnlyOnceAccepted() throws {
        let storage = InMemoryCallDirectoryStorage()
        try storage.write(
            Self.list([18_005_550_002, 18_005_550_001], [18_005_550_003: "Acme"], version: 1), to: .current)
        let provider = Provider(storage: storage)

        let expired = CXCallDirectoryExtensionContext(_stubIncremental: false)
        provider.beginRequest(with: expired)
        #expect(
            expired._stubOperations == [
                .addBlocking(18_005_550_001), .addBlocking(18_005_550_002), .addIdentification(18_005_550_003, "Acme"),
                .complete,
            ])
        #expect(expired.delegate === provider)
        expired._stubCompleteRequest(expired: true)
        #expect(try storage.read(.loaded) == nil, "an expired request loaded nothing")
        #expect(provider.failures.withLock { $0.count } == 1)

        let accepted = CXCallDirectoryExtensionContext(_stubIncremental: false)
        provider.beginRequest(with: accepted)
        accepted._stubCompleteRequest(expired: false)
        #expect(try storage.read(.loaded)?.version == 1)
    }

    @Test func anIncrementalRequestSendsOnlyTheChangesSinceTheLastAcceptedOne() throws {
        let storage = InMemoryCallDirectoryStorage()
        try storage.write(
            Self.list([18_005_550_001, 18_005_550_002], [18_005_550_003: "Acme"], version: 1), to: .loaded)
        try storage.write(
            Self.list([18_005_550_002, 18_005_550_004], [18_005_550_003: "Acme support"], version: 2), to: .current)
        let provider = Provider(storage: storage)

        let context = CXCallDirectoryExtensionContext(_stubIncremental: true)
        provider.beginRequest(with: context)
        #expect(
            context._stubOperations == [
                .removeBlocking(18_005_550_001), .removeIdentification(18_005_550_003),
                .addBlocking(18_005_550_004), .addIdentification(18_005_550_003, "Acme support"), .complete,
            ])
        context._stubFail(CXErrorCodeCallDirectoryManagerError(.loadingInterrupted))
        #expect(try storage.read(.loaded)?.version == 1, "a failed request records nothing")
        #expect(provider.failures.withLock { $0.count } == 1)

        // Without a record of what the system holds: everything removed, then added.
        try storage.write(nil, to: .loaded)
        let unknown = CXCallDirectoryExtensionContext(_stubIncremental: true)
        provider.beginRequest(with: unknown)
        #expect(Array(unknown._stubOperations.prefix(2)) == [.removeAllBlocking, .removeAllIdentification])
        unknown._stubCompleteRequest(expired: false)
        #expect(try storage.read(.loaded)?.version == 2)
    }

    @Test func withoutItsListTheRequestIsCancelledNeverCompletedEmpty() throws {
        let missing = Provider(storage: nil)
        let context = CXCallDirectoryExtensionContext(_stubIncremental: true)
        missing.beginRequest(with: context)
        #expect(context._stubOperations.isEmpty && context._stubCancelledWith != nil)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cdp-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data("damaged".utf8).write(to: directory.appendingPathComponent("current.txt"))
        let damaged = Provider(storage: FileCallDirectoryStorage(directory: directory))
        let second = CXCallDirectoryExtensionContext(_stubIncremental: false)
        damaged.beginRequest(with: second)
        #expect(
            second._stubOperations.isEmpty && second._stubCancelledWith != nil,
            "a damaged list never empties the system's entries")
        #expect(damaged.failures.withLock { $0.count } == 1)
    }

    @Test func theReloaderWaitsWhileCallKitIsLoadingAndGivesUpOnOtherErrors() async throws {
        let manager = CXCallDirectoryManager.sharedInstance
        var reloader = CallDirectoryReloader(extensionIdentifier: "com.example.phone.directory")
        reloader.pause = .milliseconds(1)
        manager._stubReset(reloadErrors: [
            CXErrorCodeCallDirectoryManagerError(.currentlyLoading),
            CXErrorCodeCallDirectoryManagerError(.currentlyLoading),
        ])
        try await reloader.reload()
        #expect(manager._stubReloads == Array(repeating: "com.example.phone.directory", count: 3))

        manager._stubReset(reloadErrors: [CXErrorCodeCallDirectoryManagerError(.extensionDisabled)], status: .disabled)
        await #expect(throws: CXErrorCodeCallDirectoryManagerError(.extensionDisabled)) { try await reloader.reload() }
        #expect(manager._stubReloads.count == 1)
        #expect(try await reloader.isEnabled() == false)

        reloader.attempts = 2
        manager._stubReset(
            reloadErrors: Array(repeating: CXErrorCodeCallDirectoryManagerError(.currentlyLoading), count: 3))
        await #expect(throws: CXErrorCodeCallDirectoryManagerError(.currentlyLoading)) { try await reloader.reload() }
        #expect(manager._stubReloads.count == 2)
        manager._stubReset()
    }
}
#endif
