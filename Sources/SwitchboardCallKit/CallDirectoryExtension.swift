#if canImport(CallKit)
import CallKit
#else
import AppleFrameworkStubs
#endif
import Foundation
import SwitchboardKit

#if !os(macOS)  // Call Directory extensions exist on iOS only.

/// CallKit's request context takes entries as the SDK's loads give them.
extension CXCallDirectoryExtensionContext: CallDirectoryEntrySink {}

/// The principal class of a Call Directory extension that shows the Switchboard user's list
/// (SPEC §11). Subclass it in the extension target, name the subclass as
/// `NSExtensionPrincipalClass`, and give it the app group the app's ``CallDirectorySync``
/// writes to:
///
/// ```swift
/// final class CallDirectoryHandler: SwitchboardCallDirectoryProvider {
///     override var appGroup: String? { "group.com.example.phone" }
/// }
/// ```
///
/// Each request asks the context whether it is incremental before anything else (CallKit's
/// rule), gives it the changes since what the system last completed (or everything), removals
/// first and additions ascending, and records the list as loaded only once the system
/// accepted it; a failed or expired request records nothing, so the next one sends the same
/// changes. The extension never goes to the network: the app fetched the list.
open class SwitchboardCallDirectoryProvider: CXCallDirectoryProvider, CXCallDirectoryExtensionContextDelegate,
    // @unchecked Sendable: it stores nothing (the request's completion may call back from any
    // thread); a subclass that adds state must keep it safe itself.
    @unchecked Sendable
{
    /// The app group shared with the app (both targets need the App Groups capability). The
    /// default reads the extension's Info.plist key `SwitchboardAppGroup`.
    open var appGroup: String? {
        Bundle.main.object(forInfoDictionaryKey: "SwitchboardAppGroup") as? String
    }

    /// Where the lists are; the default is the app group's container. Override to put them
    /// elsewhere (tests).
    open func makeStorage() -> (any CallDirectoryStorage)? {
        #if canImport(Darwin)
        return appGroup.flatMap { FileCallDirectoryStorage(appGroup: $0) }
        #else
        return nil
        #endif
    }

    /// Called with every failure of a request (the system's, or the storage's); the default
    /// does nothing. The request has recorded nothing.
    open func requestDidFail(_ error: any Error) {}

    open override func beginRequest(with context: CXCallDirectoryExtensionContext) {
        context.delegate = self
        let systemIsIncremental = context.isIncremental  // asked before any entry, as CallKit requires
        guard let storage = makeStorage() else {
            fail(context, CallDirectorySyncError.storage("no shared storage: set the extension's app group"))
            return
        }
        let loader = CallDirectoryLoader(storage: storage)
        let load: CallDirectoryLoad
        do {
            load = try loader.prepare(systemIsIncremental: systemIsIncremental)
        } catch {
            fail(context, error)
            return
        }
        load.apply(to: context)
        context.completeRequest { [weak self] expired in
            guard !expired else {
                self?.requestDidFail(CXErrorCodeCallDirectoryManagerError(.loadingInterrupted))
                return
            }
            do { try loader.completed(load) } catch { self?.requestDidFail(error) }
        }
    }

    public func requestFailed(for extensionContext: CXCallDirectoryExtensionContext, withError error: any Error) {
        requestDidFail(error)
    }

    private func fail(_ context: CXCallDirectoryExtensionContext, _ error: any Error) {
        requestDidFail(error)
        context.cancelRequest(withError: error)
    }
}

/// Asks the system to run the app's Call Directory extension again: the `reload` a
/// ``CallDirectorySync`` takes. A reload while one is running (`currentlyLoading`) waits and
/// tries again, a few times.
public struct CallDirectoryReloader: Sendable {
    public let extensionIdentifier: String
    /// Tries after `currentlyLoading`, and the pause between them.
    public var attempts = 5
    public var pause: Duration = .seconds(1)

    /// `extensionIdentifier`: the extension's bundle identifier.
    public init(extensionIdentifier: String) { self.extensionIdentifier = extensionIdentifier }

    public func reload() async throws {
        var attempt = 1
        while true {
            do {
                return try await CXCallDirectoryManager.sharedInstance.reloadExtension(
                    withIdentifier: extensionIdentifier)
            } catch let error as CXErrorCodeCallDirectoryManagerError
                where error.code == .currentlyLoading && attempt < attempts
            {
                attempt += 1
                try await Task.sleep(for: pause)
            }
        }
    }

    /// Whether the user turned the extension on (Settings › Phone › Call Blocking & Identification).
    public func isEnabled() async throws -> Bool {
        try await CXCallDirectoryManager.sharedInstance.enabledStatusForExtension(withIdentifier: extensionIdentifier)
            == .enabled
    }
}

#endif
