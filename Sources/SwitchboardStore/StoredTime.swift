import Foundation
import SwitchboardWire

/// How times are stored: whole milliseconds since 1970, rounded down.
package enum StoredTime {
    package static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }
    package static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }
}

extension SQLiteRow {
    /// The known case of a wire enum a non-null `TEXT` column spells; a text this version does
    /// not know throws ``StoreError/Code/corrupt`` (an open enum would read it as `unknown`).
    package func known<T: WireEnum>(_ name: String, as type: T.Type = T.self) throws -> T {
        let text = try string(name)
        guard let value = T(knownRawValue: text) else {
            throw StoreError(
                code: .corrupt, message: "column '\(name)' holds '\(text)', which is not a \(T.self) this version knows"
            )
        }
        return value
    }
}
