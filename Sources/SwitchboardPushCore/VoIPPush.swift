import Foundation
import SwitchboardWire

/// The VoIP push of SPEC §3: payload and headers, validated before anything is sent.
public struct VoIPPush: Sendable, Equatable {
    /// The largest VoIP payload APNs accepts.
    public static let maxPayloadBytes = 5120
    /// The longest collapse id APNs accepts.
    public static let maxCollapseIDBytes = 64

    public let payload: [UInt8]
    public let headers: [(String, String)]

    public static func == (lhs: VoIPPush, rhs: VoIPPush) -> Bool {
        lhs.payload == rhs.payload && lhs.headers.elementsEqual(rhs.headers, by: { $0.0 == $1.0 && $0.1 == $1.1 })
    }

    /// Why a push cannot be built.
    public enum Problem: Error, Sendable, Equatable {
        case payloadTooLarge(Int)
        case collapseIDTooLong(Int)
        case expired
    }

    /// Builds the push for one ringing invitation on one device.
    ///
    /// - Parameters:
    ///   - payload: what the phone reads (the one type the SDK decodes, ``VoIPPayload``).
    ///   - apnsID: the job id (a lowercase UUID), the same on every retry of the job.
    ///   - expiresAt: the end of the ring window: APNs must not deliver it later.
    ///   - collapseID: instead of `call_<callId>` (a gateway app's hint).
    public static func build(
        _ payload: VoIPPayload, bundleID: String, apnsID: String, expiresAt: Date, now: Date, collapseID: String? = nil
    ) throws(Problem) -> VoIPPush {
        guard expiresAt > now else { throw .expired }
        let bytes = (try? payload.json()).map(Array.init) ?? []
        guard bytes.count <= maxPayloadBytes else { throw .payloadTooLarge(bytes.count) }
        let collapseID = collapseID ?? "call_\(payload.callId)"
        guard collapseID.utf8.count <= maxCollapseIDBytes else { throw .collapseIDTooLong(collapseID.utf8.count) }
        // Whole seconds, rounded down: never later than the ring window's end.
        let expiration = Int64(expiresAt.timeIntervalSince1970.rounded(.down))
        return VoIPPush(
            payload: bytes,
            headers: [
                ("apns-push-type", "voip"),
                ("apns-topic", "\(bundleID).voip"),
                ("apns-priority", "10"),
                ("apns-expiration", String(expiration)),
                ("apns-collapse-id", collapseID),
                ("apns-id", apnsID),
            ])
    }
}
