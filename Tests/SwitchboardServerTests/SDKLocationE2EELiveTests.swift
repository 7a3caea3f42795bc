import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
import SwitchboardKit
import SwitchboardTesting
import SwitchboardWire

/// The SDK's `LiveLocationClient` and `E2EEFeed` against the real `switchboard` binary over
/// loopback: a failed handler never skips an item, and the feed's cursor (apart from the
/// event cursor) acknowledges what was stored.
@Suite("SDK live location and E2EE feed against the binary", .serialized, .timeLimit(.minutes(3)))
struct SDKLocationE2EELiveTests {
    struct HandlerFailure: Error {}

    @Test func theFeedHandsEveryItemOverUntilTheAppStoredItAndTheLocationClientRoundTrips() async throws {
        let data = ScratchDirectory()
        defer { data.remove() }
        let server = try await ServerProcess.launch(
            arguments: ["--listen", "127.0.0.1:0", "--data-dir", data.path],
            environment: ["SWITCHBOARD_PASSWORD_SCRYPT_LOG_N": "15"])
        defer { _ = server.stop() }
        let alice = try await liveRegister(server.address, "alice\(UInt32.random(in: 0...UInt32.max))")
        let bob = try await liveRegister(server.address, "bob\(UInt32.random(in: 0...UInt32.max))")
        let conversation = try await liveBefriend(server.address, alice, bob)
        func client(_ account: LiveAccount) -> SwitchboardClient {
            SwitchboardClient(
                baseURL: URL(string: "http://\(server.address)")!, token: account.token,
                transport: URLSessionTransport())
        }
        let scope = E2EEScope.conversation(conversation)

        // Live location through the SDK.
        let locations = LiveLocationClient(client: client(alice))
        let started = try await locations.start(
            in: scope, at: Position(latitude: 48.8566, longitude: 2.3522, accuracy: 30), duration: .seconds(600))
        #expect(started.latitude == 48.8566)
        let seen = try await LiveLocationClient(client: client(bob)).list(in: scope)
        #expect(seen.count == 1 && seen.first?.freshness(at: Date()) != .expired)
        await #expect(throws: LiveLocationError.notSharing) {
            try await LiveLocationClient(client: client(bob)).update(
                in: scope, to: Position(latitude: 1, longitude: 2, accuracy: 3))
        }
        #expect(try await locations.city() == nil, "no city database configured: null")

        // E2EE: Bob's device, Alice's sends, Bob's feed.
        let aliceDevice = UUID().uuidString.lowercased(), bobDevice = UUID().uuidString.lowercased()
        _ = try await E2EEClient(client: client(alice)).registerDevice(id: aliceDevice)
        _ = try await E2EEClient(client: client(bob)).registerDevice(id: bobDevice)
        let sender = E2EEClient(client: client(alice))
        for index in 0..<5 {
            _ = try await sender.send(
                SendE2EEMessage(
                    senderDeviceId: aliceDevice, kind: "application",
                    recipients: [
                        E2EERecipient(deviceId: bobDevice, ciphertext: Data([UInt8(index), 42]).base64EncodedString())
                    ]),
                in: scope)
        }
        let store = InMemoryE2EECursorStore()
        let feed = E2EEFeed(client: client(bob), deviceID: bobDevice, scope: scope, cursorStore: store)
        // The app fails to store the batch: nothing is skipped, the cursor stays.
        await #expect(throws: E2EEFeedError.self) { try await feed.sync { _ in throw HandlerFailure() } }
        #expect(await store.load(scope: scope, deviceID: bobDevice) == nil)
        let stored = Mutex<[Int64]>([])
        let result = try await feed.sync { items in stored.withLock { $0 += items.map(\.sequence) } }
        #expect(result == .caughtUp(cursor: 5, batches: 1))
        #expect(stored.withLock { $0 } == [1, 2, 3, 4, 5])
        #expect(await store.load(scope: scope, deviceID: bobDevice) == 5)
        // Caught up: the server deleted what the cursor acknowledged, and a new send arrives alone.
        _ = try await sender.send(
            SendE2EEMessage(
                senderDeviceId: aliceDevice, kind: "commit",
                recipients: [E2EERecipient(deviceId: bobDevice, ciphertext: "AAE=")]), in: scope)
        let next = Mutex<[E2EEItem]>([])
        _ = try await feed.sync { items in next.withLock { $0 += items } }
        #expect(next.withLock { $0.map(\.sequence) } == [6] && next.withLock { $0.first?.kind } == "commit")
        #expect(server.stop() == 0)
    }
}
