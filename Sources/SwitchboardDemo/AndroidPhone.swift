import Foundation
import Synchronization
import SwitchboardAPNsEmulator
import SwitchboardKit
import SwitchboardWire
import SwitchboardPushCore

/// A simulated Android phone for the demo: its app registers its FCM token and, on a phone
/// whose maker has its own push service, that token and the brand (`POST /push/devices`); its
/// pushes come from the emulator's inbox for the channel the server picked. A ring shows the
/// full-screen ringing notification (from an FCM data message, or the maker's notification
/// with the ring's data); `call_ended` takes it down; a missed call leaves a notification.
final class AndroidPhone: Sendable {
    /// What the phone's notification shade shows for one call.
    enum Shown: Sendable, Equatable {
        case ringing
        case gone(reason: String)
        case missed(text: String)
    }

    let name: String
    /// `fcm`, or the maker's channel (`xiaomi`, …) this phone also has a token for.
    let maker: String
    private let client: SwitchboardClient
    private let emulator: APNsEmulator
    private let fcmToken = "fcm:" + SecureToken.make()
    private let makerToken = SecureToken.make()
    private let deviceID = UUID()
    private let say: @Sendable (_ phone: String, _ text: String, _ at: Date) -> Void
    private let state = Mutex<(shown: [String: Shown], wokenAt: [String: Date], read: [String: Int])>(([:], [:], [:]))
    private let listener = Mutex<Task<Void, Never>?>(nil)

    init(
        _ name: String, maker: String, client: SwitchboardClient, emulator: APNsEmulator,
        say: @escaping @Sendable (_ phone: String, _ text: String, _ at: Date) -> Void
    ) {
        self.name = name
        self.maker = maker
        self.client = client
        self.emulator = emulator
        self.say = say
    }

    /// Registers the tokens, as the app does at start, and starts reading its pushes.
    func register() async throws {
        var tokens = ["fcm": PushTokenRegistration(token: fcmToken)]
        if maker != "fcm" { tokens[maker] = PushTokenRegistration(token: makerToken) }
        _ = try await client.registerPushDevice(
            RegisterPushDevice(
                deviceId: deviceID.uuidString.lowercased(), platform: .android,
                brand: maker == "fcm" ? "google" : maker, tokens: tokens))
        let task = Task { [weak self] in
            while !Task.isCancelled, let self {
                self.readPushes()
                try? await Task.sleep(nanoseconds: 10_000_000)
            }
        }
        listener.withLock { $0 = task }
    }

    func shutDown() { listener.withLock { $0?.cancel() } }

    func shown(_ callID: String) -> Shown? { state.withLock { $0.shown[callID] } }
    func wokenAt(_ callID: String) -> Date? { state.withLock { $0.wokenAt[callID] } }

    /// The user taps "Answer" on the ringing notification.
    func answer(_ callID: String) async throws {
        say(name, "user answers from the notification", Date())
        _ = try await client.accept(callID, withMediaToken: true)
        state.withLock { $0.shown[callID] = .gone(reason: "answered") }
        say(name, "connected \(callID.prefix(8))", Date())
    }

    /// Reads what arrived on both channels since the last look.
    private func readPushes() {
        for (channel, token) in [("fcm", fcmToken), (maker, makerToken)] where channel == "fcm" || maker != "fcm" {
            let after = state.withLock { $0.read[channel] ?? 0 }
            let messages =
                channel == "fcm"
                ? emulator.fcmInbox(token: token, after: after)
                : emulator.vendorInbox(channel: channel, token: token, after: after)
            guard let last = messages.last else { continue }
            state.withLock { $0.read[channel] = last.index }
            for message in messages { handle(message.payload, from: channel) }
        }
    }

    private func handle(_ payload: [UInt8], from channel: String) {
        let now = Date()
        guard let (data, notification) = Self.read(payload, from: channel), let callID = data["callId"] else { return }
        let via = channel == "fcm" ? "FCM data message" : "\(channel) notification"
        switch data["type"] {
        case "call":
            state.withLock {
                $0.shown[callID] = .ringing
                $0.wokenAt[callID] = $0.wokenAt[callID] ?? now
            }
            say(
                name,
                "\(via): incoming call \(callID.prefix(8)) from \(data["callerName"] ?? "?") — full-screen ringing notification",
                now)
        case "call_ended" where data["reason"] == "missed":
            let text = notification ?? "Missed call from \(data["callerName"] ?? "?")"
            state.withLock { $0.shown[callID] = .missed(text: text) }
            say(name, "\(via): ringing notification replaced by \"\(text)\"", now)
        case "call_ended":
            let reason = data["reason"] ?? "?"
            state.withLock { $0.shown[callID] = .gone(reason: reason) }
            say(name, "\(via): call_ended (\(reason)), ringing notification removed", now)
        default:
            break
        }
    }

    /// The data fields of a message as the app gets them, and a shown notification's text.
    static func read(_ payload: [UInt8], from channel: String) -> ([String: String], String?)? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any] else {
            return nil
        }
        if channel == "fcm" {
            guard let data = (object["message"] as? [String: Any])?["data"] as? [String: String] else { return nil }
            return (data, nil)
        }
        // Xiaomi's stand-in keeps the form's fields: the data is `payload`, a notification has a description.
        guard let form = object as? [String: String],
            let data = VendorNotification.fields(of: Array((form["payload"] ?? "").utf8))
        else { return nil }
        return (data, form["pass_through"] == "0" ? form["description"] : nil)
    }
}

/// A random token for a simulated phone.
enum SecureToken {
    static func make() -> String { (0..<24).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }
}
