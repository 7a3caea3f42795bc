import Foundation
import SwitchboardPushCore

/// A scripted misbehaviour of the emulator, for one device token or for every push.
///
/// In JSON (a `--faults` file, or the body of `POST /control/faults`), one object per fault:
/// ```json
/// {"kind": "unregistered", "token": "<hex>", "count": 1}
/// {"kind": "unregistered", "reason": "ExpiredToken"}
/// {"kind": "badDeviceToken"}            {"kind": "tooManyRequests"}
/// {"kind": "internalServerError"}       {"kind": "serviceUnavailable", "reason": "Shutdown"}
/// {"kind": "respond", "status": 403, "reason": "Forbidden"}
/// {"kind": "delay", "milliseconds": 5000}
/// {"kind": "goawayAfter", "streams": 3, "reason": "Shutdown"}
/// {"kind": "refuseStream", "count": 2}
/// ```
/// `token` (hex, any case) limits the fault to pushes for that device token; without it the
/// fault applies to every push. `count` is how many pushes (for `goawayAfter`: how many
/// connections) it applies to; without it, it never runs out.
public struct APNsFault: Sendable, Hashable {
    /// What the fault does.
    public enum Kind: Sendable, Hashable {
        /// 410 `Unregistered` (or the fault's `reason`, such as `ExpiredToken`) with a timestamp.
        case unregistered
        /// 400 `BadDeviceToken`.
        case badDeviceToken
        /// 429 `TooManyRequests`.
        case tooManyRequests
        /// 500 `InternalServerError`.
        case internalServerError
        /// 503 `ServiceUnavailable` (or the fault's `reason`, such as `Shutdown`).
        case serviceUnavailable
        /// Any status with the fault's `reason`.
        case respond(status: Int)
        /// Holds the answer for this long, then answers normally; other streams go on meanwhile.
        case delay(milliseconds: Int)
        /// Answers this many push streams on a connection, then sends GOAWAY with
        /// `{"reason":…}` debug data (default `Shutdown`) and closes it.
        case goawayAfter(streams: Int)
        /// Resets the stream with `REFUSED_STREAM` without processing it.
        case refuseStream

        /// The JSON `kind` string.
        public var name: String {
            switch self {
            case .unregistered: "unregistered"
            case .badDeviceToken: "badDeviceToken"
            case .tooManyRequests: "tooManyRequests"
            case .internalServerError: "internalServerError"
            case .serviceUnavailable: "serviceUnavailable"
            case .respond: "respond"
            case .delay: "delay"
            case .goawayAfter: "goawayAfter"
            case .refuseStream: "refuseStream"
            }
        }
    }

    /// What the fault does.
    public var kind: Kind
    /// The device token it is limited to (lowercase hex), or `nil` for every push.
    public var token: String?
    /// How many more times it applies, or `nil` for always.
    public var count: Int?
    /// The reason in the response body or the GOAWAY debug data, replacing the default.
    public var reason: String?

    /// Creates a fault; `token` is stored lowercase.
    public init(_ kind: Kind, token: String? = nil, count: Int? = nil, reason: String? = nil) {
        self.kind = kind
        self.token = token?.lowercased()
        self.count = count
        self.reason = reason
    }

    /// The answer a status fault gives at `nowMilliseconds`; `nil` for delay, GOAWAY and refusal.
    func rejection(nowMilliseconds: Int64) -> APNsRejection? {
        switch kind {
        case .unregistered:
            APNsRejection(status: 410, reason: reason ?? APNsReason.unregistered.text, timestamp: nowMilliseconds)
        case .badDeviceToken: APNsRejection(status: 400, reason: reason ?? APNsReason.badDeviceToken.text)
        case .tooManyRequests: APNsRejection(status: 429, reason: reason ?? APNsReason.tooManyRequests.text)
        case .internalServerError:
            APNsRejection(status: 500, reason: reason ?? APNsReason.internalServerError.text)
        case .serviceUnavailable:
            APNsRejection(status: 503, reason: reason ?? APNsReason.serviceUnavailable.text)
        case .respond(let status):
            APNsRejection(
                status: status, reason: reason ?? "InternalServerError",
                timestamp: status == 410 ? nowMilliseconds : nil)
        case .delay, .goawayAfter, .refuseStream: nil
        }
    }
}

/// A fault script that could not be read, with what was wrong and where.
public struct APNsFaultScriptError: Error, Sendable, CustomStringConvertible {
    /// What was wrong, for example `fault 2: delay needs "milliseconds" (an integer ≥ 0)`.
    public let message: String
    /// The message.
    public var description: String { message }
}

extension APNsFault {
    /// Parses a fault script: one fault object, an array of them, or `{"faults": [...]}`.
    public static func parseScript(_ json: [UInt8]) throws(APNsFaultScriptError) -> [APNsFault] {
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: Data(json))
        } catch {
            throw APNsFaultScriptError(message: "not JSON: \(error.localizedDescription)")
        }
        let list: [Any]
        if let array = root as? [Any] {
            list = array
        } else if let object = root as? [String: Any] {
            if let faults = object["faults"] {
                guard let array = faults as? [Any] else {
                    throw APNsFaultScriptError(message: "\"faults\" must be an array")
                }
                list = array
            } else {
                list = [object]
            }
        } else {
            throw APNsFaultScriptError(message: "expected a fault object, an array or {\"faults\": [...]}")
        }
        var faults: [APNsFault] = []
        for (index, element) in list.enumerated() {
            guard let object = element as? [String: Any] else {
                throw APNsFaultScriptError(message: "fault \(index): not a JSON object")
            }
            do {
                faults.append(try parse(object))
            } catch {
                throw APNsFaultScriptError(message: "fault \(index): \(error.message)")
            }
        }
        return faults
    }

    private static func parse(_ object: [String: Any]) throws(APNsFaultScriptError) -> APNsFault {
        func fail(_ message: String) -> APNsFaultScriptError { APNsFaultScriptError(message: message) }
        func integer(_ key: String, minimum: Int) throws(APNsFaultScriptError) -> Int? {
            guard let value = object[key] else { return nil }
            // On Linux every JSON number `is Bool`; a real boolean is the NSNumber of ObjC type "c".
            guard let number = value as? NSNumber, String(cString: number.objCType) != "c",
                let integer = Int(exactly: number.doubleValue), integer >= minimum
            else { throw fail("\"\(key)\" must be an integer ≥ \(minimum)") }
            return integer
        }
        func string(_ key: String) throws(APNsFaultScriptError) -> String? {
            guard let value = object[key] else { return nil }
            guard let text = value as? String, !text.isEmpty else {
                throw fail("\"\(key)\" must be a non-empty string")
            }
            return text
        }

        guard let name = object["kind"] as? String else { throw fail("\"kind\" (a string) is required") }
        let kind: Kind
        switch name {
        case "unregistered": kind = .unregistered
        case "badDeviceToken": kind = .badDeviceToken
        case "tooManyRequests": kind = .tooManyRequests
        case "internalServerError": kind = .internalServerError
        case "serviceUnavailable": kind = .serviceUnavailable
        case "refuseStream": kind = .refuseStream
        case "respond":
            guard let status = try integer("status", minimum: 100), status <= 599 else {
                throw fail("respond needs \"status\" (an integer from 100 to 599)")
            }
            kind = .respond(status: status)
        case "delay":
            guard let milliseconds = try integer("milliseconds", minimum: 0) else {
                throw fail("delay needs \"milliseconds\" (an integer ≥ 0)")
            }
            kind = .delay(milliseconds: milliseconds)
        case "goawayAfter":
            guard let streams = try integer("streams", minimum: 1) else {
                throw fail("goawayAfter needs \"streams\" (an integer ≥ 1)")
            }
            kind = .goawayAfter(streams: streams)
        default:
            throw fail(
                "unknown kind \"\(name)\" (expected unregistered, badDeviceToken, tooManyRequests, "
                    + "internalServerError, serviceUnavailable, respond, delay, goawayAfter or refuseStream)")
        }
        let token = try string("token")
        if let token, !PushValidator.isDeviceToken(Substring(token)) {
            throw fail("\"token\" must be a device token (64 or more hex digits)")
        }
        let known: Set<String> = ["kind", "token", "count", "reason", "status", "milliseconds", "streams"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            throw fail("unknown member \"\(unknown)\"")
        }
        return APNsFault(kind, token: token, count: try integer("count", minimum: 1), reason: try string("reason"))
    }

    /// Writes this fault as the JSON object ``parseScript(_:)`` reads.
    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.member("kind", kind.name)
        switch kind {
        case .respond(let status): json.member("status", status)
        case .delay(let milliseconds): json.member("milliseconds", milliseconds)
        case .goawayAfter(let streams): json.member("streams", streams)
        default: break
        }
        if let token { json.member("token", token) }
        if let count { json.member("count", count) }
        if let reason { json.member("reason", reason) }
        json.endObject()
    }
}
