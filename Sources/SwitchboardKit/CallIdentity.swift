import Foundation

/// The call system's UUID for a server call, derived from the `callId` alone, so the push path
/// and the event-stream path name the same call and the system never shows two incoming-call
/// screens for one call (SPEC §4 rule 2).
public enum CallIdentity {
    /// The UUID for `callID`: the id itself when it is a UUID (the server's ids are), else a
    /// stable name-based UUID (version 8 layout) from a 128-bit FNV-1a hash of its UTF-8 bytes.
    public static func uuid(forCallID callID: String) -> UUID {
        if let uuid = UUID(uuidString: callID) { return uuid }
        // Two 64-bit FNV-1a lanes with different offset bases make 128 bits.
        var low: UInt64 = 0xcbf2_9ce4_8422_2325
        var high: UInt64 = 0x6c62_272e_07bb_0142
        for byte in callID.utf8 {
            low = (low ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            high = (high ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            high = (high ^ (low >> 29)) &* 0x0000_0100_0000_01b3
        }
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> (56 - 8 * index))
            bytes[8 + index] = UInt8(truncatingIfNeeded: low >> (56 - 8 * index))
        }
        bytes[6] = (bytes[6] & 0x0f) | 0x80  // version 8: custom
        bytes[8] = (bytes[8] & 0x3f) | 0x80  // RFC 4122 variant
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}
