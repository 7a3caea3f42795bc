import Foundation
import Glibc
import SwitchboardCLI
import SwitchboardCrypto
import SwitchboardLifecycle

/// `switchboard-dev push-emulator` (also `apns-emulator`): parses its options, runs an ``APNsEmulator`` until SIGTERM or
/// SIGINT, and exits 0.
///
/// ```swift
/// // in the CLI's dispatcher, with the arguments after "apns-emulator":
/// case "apns-emulator": return APNsEmulatorCommand.run(rest)
/// ```
public enum APNsEmulatorCommand {
    /// The `--help` text.
    public static let help = """
        Usage: switchboard-dev push-emulator [--listen HOST:PORT] [--bundle-id ID] [--team-id ID]
                                             [--key-id ID] [--public-key FILE] [--faults FILE]
                                             [--tls --ca-out FILE] [--max-concurrent-streams N]
                                             [--inbox-capacity N] [--fcm-service-account FILE]
                                             [--huawei-app ID:SECRET] [--xiaomi-app PKG:SECRET]
                                             [--oppo-app KEY:MASTER_SECRET]
                                             [--vivo-app ID:KEY:SECRET] [--verbose]
               switchboard-dev apns-emulator …   (the same command, its first name)

        Runs a local stand-in for Apple's APNs until SIGTERM or SIGINT, then exits 0, and with
        the flags below for FCM, Huawei, Xiaomi, OPPO and vivo on the same port. Point the
        push provider's base URL at it instead of api.push.apple.com. It speaks HTTP/2 only:
        cleartext h2c with prior knowledge by default (curl --http2-prior-knowledge), or TLS
        with ALPN h2 (--tls). The first line on standard output is
          {"msg":"listening","address":"127.0.0.1:PORT","mode":"h2c"}
        (with port 0 the kernel picks the port); with --verbose one JSON line follows per push
        answered (device tokens shown only as a short suffix).

        Options:
          --listen HOST:PORT        address to listen on; HOST is an IP literal or localhost,
                                    PORT may be 0 (default 127.0.0.1:2197)
          --bundle-id ID            the app's bundle id; topics accepted: ID.voip for voip
                                    pushes, ID for alert and background ones (without it,
                                    any topic ending in .voip, and any other for the rest)
          --team-id ID              the Team ID a provider token's "iss" must name
          --key-id ID               the Key ID a provider token's "kid" must name
          --public-key FILE         PEM (SPKI, "BEGIN PUBLIC KEY") of the ES256 key whose tokens
                                    are accepted. Without it provider tokens are only checked
                                    structurally (three base64url parts, a 64-byte signature,
                                    alg ES256, kid, iss, iat and its age): the signature is NOT
                                    verified. Get it from a .p8 key with
                                    openssl pkey -in AuthKey.p8 -pubout
          --faults FILE             JSON fault script in force from the start (see Faults)
          --tls                     serve TLS with ALPN h2, using a self-signed certificate
                                    for localhost, 127.0.0.1 and ::1 made at start
          --ca-out FILE             with --tls: write that certificate (PEM) to FILE, for the
                                    client to trust (curl --cacert FILE)
          --max-concurrent-streams N  SETTINGS_MAX_CONCURRENT_STREAMS (default 1000)
          --inbox-capacity N        messages kept per device token (default 1000)
          --fcm-service-account FILE  also stand in for FCM HTTP v1 (see FCM), accepting the
                                    RS256 assertions of this Firebase service-account JSON
          --huawei-app ID:SECRET    also stand in for Huawei Push Kit (see Huawei), accepting
                                    this app id and secret as OAuth2 client credentials
          --xiaomi-app PKG:SECRET   also stand in for Xiaomi MiPush (see Xiaomi) for this
                                    package name and app secret
          --oppo-app KEY:MASTER_SECRET  also stand in for OPPO push (see OPPO)
          --vivo-app ID:KEY:SECRET  also stand in for vivo push (see vivo)
          --verbose                 log every push answered
          -h, --help                show this help

        What it checks, in this order (the first failure answers, as APNs does, with
        {"reason":"…"} and the apns-id header):
          path POST /3/device/<token> (404 BadPath, 405 MethodNotAllowed, 400 MissingDeviceToken);
          authorization, apns-topic, apns-push-type, apns-priority, apns-expiration,
          apns-collapse-id or apns-id sent twice (400 DuplicateHeaders);
          authorization: bearer <JWT> (403 MissingProviderToken; InvalidProviderToken for a bad
          signature, alg, kid, iss or an iat more than 60 s ahead; ExpiredProviderToken for an
          iat older than 60 minutes);
          the token: 64+ hex digits (400 BadDeviceToken);
          apns-topic (400 MissingTopic; BadTopic if not a bundle id; TopicDisallowed unless it
          is <bundle>.voip); apns-push-type must be voip (400 InvalidPushType);
          apns-priority 5 or 10 (400 BadPriority); apns-expiration an integer (400
          BadExpirationDate); apns-collapse-id at most 64 bytes (400 BadCollapseId); apns-id a
          lowercase 8-4-4-4-12 UUID (400 BadMessageId);
          the payload: non-empty (400 PayloadEmpty), at most 5120 bytes (413 PayloadTooLarge),
          a JSON object (400 BadPayload: APNs documents no reason for malformed JSON, so this
          one is the emulator's own).
        A valid push is answered 200 with its apns-id (generated when absent) and appended to
        its token's inbox.

        Faults (the --faults file, or POST /control/faults): one object, an array, or
        {"faults":[…]}. "token" (hex) limits a fault to one device token, otherwise it applies
        to every push; "count" is how many pushes it applies to (default: no limit).
          {"kind":"unregistered"}          410 Unregistered with a timestamp
                                           ("reason":"ExpiredToken" for the other 410)
          {"kind":"badDeviceToken"}        400 BadDeviceToken
          {"kind":"tooManyRequests"}       429 TooManyRequests
          {"kind":"internalServerError"}   500 InternalServerError
          {"kind":"serviceUnavailable"}    503 ServiceUnavailable ("reason":"Shutdown" too)
          {"kind":"respond","status":403,"reason":"Forbidden"}   any status and reason
          {"kind":"delay","milliseconds":5000}   hold the answer (other streams go on); a
                                           stream the client resets meanwhile is not delivered
          {"kind":"goawayAfter","streams":3,"reason":"Shutdown"}   answer 3 pushes on a
                                           connection, then GOAWAY with {"reason":…} and close
                                           ("count" here counts connections)
          {"kind":"refuseStream"}          RST_STREAM REFUSED_STREAM, push not processed
        Example: {"faults":[{"kind":"unregistered","token":"<hex>","count":1},
                            {"kind":"delay","milliseconds":3000,"count":2}]}

        Inbox and control (HTTP/2 on the same port; answers are JSON):
          GET /inbox/<token>?after=N&wait=S
              the pushes for <token> after index N (indices start at 1), answered at once if
              there are any, else held up to S seconds (at most 60) until one arrives:
              {"messages":[{"index":1,"apnsId":"…","headers":{"apns-topic":"…",…},
                            "payload":{…},"receivedAt":"2024-01-01T00:00:00.000Z"}],"cursor":1}
              ask again with after=<cursor>; a cursor below N means the inbox started over
          DELETE /inbox/<token>             empty that inbox (204)
          GET /control/faults               the faults in force, with remaining counts
          POST /control/faults              add faults (body as in the --faults file)
          DELETE /control/faults[?token=T]  remove all faults, or those for one token (204)
          GET /control/stats                answers per status and reason, connections,
                                            streams, deliveries, duplicate deliveries (same
                                            apns-id again), refusals, RST_STREAMs received,
                                            GOAWAYs (faults' and all), long polls

        FCM (with --fcm-service-account, on the same port; point token_uri of the service
        account at http(s)://HOST:PORT/token and the server's fcmURL at http(s)://HOST:PORT):
          POST /token                       OAuth2 jwt-bearer grant: the assertion must be signed
                                            by the account's key, iss its client_email, scope
                                            firebase.messaging, aud ending in /token, and live
                                            at most 60 minutes; answers an access token (1 h)
          POST /v1/projects/<project>/messages:send
                                            checks the access token (401 UNAUTHENTICATED), the
                                            project (403 PERMISSION_DENIED), one token target,
                                            data values all strings and at most 4096 bytes,
                                            android.priority HIGH or NORMAL and ttl like "30s"
                                            (400 INVALID_ARGUMENT); answers {"name":…}
          GET|DELETE /fcm/inbox/<token>     as /inbox/<token>, for FCM tokens (case kept)
          POST /fcm/control/faults          {"faults":[{"token":T,"error":"UNREGISTERED",
                                            "count":1,"retryAfter":5}]}; errors: UNREGISTERED,
                                            INVALID_ARGUMENT, SENDER_ID_MISMATCH, QUOTA_EXCEEDED,
                                            UNAVAILABLE, INTERNAL, THIRD_PARTY_AUTH_ERROR,
                                            UNAUTHENTICATED

        Huawei (with --huawei-app, on the same port; point huaweiURL at http(s)://HOST:PORT and
        huaweiTokenURL at http(s)://HOST:PORT/oauth2/v3/token):
          POST /oauth2/v3/token             client_credentials grant for the app id and secret
          POST /v1/<appId>/messages:send    checks the access token (401, code 80200003), the app
                                            (80200001), one token, data a string, urgency and ttl
                                            (400, code 80100003); answers 200 {"code":"80000000"}
          GET|DELETE /huawei/inbox/<token>  as /inbox/<token>, for Huawei tokens (case kept)
          POST /huawei/control/faults       {"token":T,"codes":["80300007"]}: codes answered in order

        Xiaomi (with --xiaomi-app; point xiaomiURL at http(s)://HOST:PORT):
          POST /v3/message/regid            checks Authorization: key=<secret> (401, code 22008),
                                            the package (22022), one registration_id, pass_through,
                                            payload (≤ 4 KB), time_to_live, a notification's title,
                                            description and notify_id; answers {"code":0,…}
        OPPO (with --oppo-app; point oppoURL at http(s)://HOST:PORT):
          POST /server/v1/auth              app_key, timestamp (ms, within 10 minutes) and sign
                                            (SHA-256 hex of key + timestamp + master secret):
                                            {"code":0,"data":{"auth_token":…}}, 24 hours
          POST /server/v1/message/notification/unicast  checks auth_token (code 11), message
                                            (target_type 2, title, content, channel_id,
                                            off_line_ttl: code 41); answers {"code":0,…}
        vivo (with --vivo-app; point vivoURL at http(s)://HOST:PORT):
          POST /message/auth                appId, appKey, timestamp and sign (MD5 hex of id + key
                                            + timestamp + secret): {"result":0,"authToken":…}
          POST /message/send                checks the authToken header (10000), appId (10094),
                                            regId, title ≤ 40 (10056), content ≤ 100 (10058),
                                            timeToLive 60…604800, requestId; answers {"result":0}
        For each of them:
          GET|DELETE /<xiaomi|oppo|vivo>/inbox/<id>  as /inbox/<token>, per registration id
          POST /<xiaomi|oppo|vivo>/control/faults    {"token":ID,"codes":["20301"]}: result codes
                                            answered in order (vivo's "invalidUser" answers 0
                                            with invalidUser.status 1: the device is gone)

        Example:
          switchboard-dev apns-emulator --listen 127.0.0.1:0 --bundle-id com.example.app \\
            --team-id DEF123GHIJ --key-id ABC123DEFG --public-key key.pub.pem
        """

    /// Runs the command with the arguments that follow `apns-emulator` and returns the exit
    /// status: 0 after SIGTERM/SIGINT or `--help`, 1 when it cannot start, 2 for bad usage.
    ///
    /// Blocks SIGTERM and SIGINT on the calling thread before any thread starts (so every
    /// thread inherits the mask) and waits for them with `sigwait`; the library part installs
    /// no signal handling of its own.
    public static func run(_ arguments: [String]) -> Int32 {
        let options: Options
        switch CommandStart(arguments, command: "apns-emulator", help: help, parse: Options.init(parsing:)) {
        case .run(let parsed): options = parsed
        case .exit(let status): return status
        }

        // Handled from here on: a stop while the tool starts is kept for the wait below.
        let stop: StopSignalWait
        do {
            stop = try StopSignalWait([SIGTERM, SIGINT])
        } catch {
            printError("cannot start: \(error)")
            return 1
        }
        // TLS writes go through OpenSSL's plain write(2): a client that vanishes must not kill
        // the emulator with SIGPIPE (the write fails with EPIPE instead).
        signal(SIGPIPE, SIG_IGN)

        let configuration: APNsEmulatorConfiguration
        do {
            configuration = try options.configuration()
        } catch {
            printError("cannot start: \(error)")
            return 1
        }
        let emulator = APNsEmulator(configuration: configuration)
        let address: APNsEmulator.Address
        do {
            address = try emulator.start()
            if let caOut = options.caOut, let certificate = emulator.certificatePEM {
                try Data(certificate.utf8).write(to: URL(fileURLWithPath: caOut))
            }
        } catch {
            printError("cannot start: \(error)")
            return 1
        }
        var listening = JSONWriter()
        listening.beginObject()
        listening.member("msg", "listening")
        listening.member("address", address.description)
        listening.member("mode", address.mode)
        if let caOut = options.caOut { listening.member("caFile", caOut) }
        listening.endObject()
        StandardOutput.line(listening.text)

        let received = stop.wait()

        // shutdown() is async; run it off this thread's executor and wait here.
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            await emulator.shutdown()
            done.signal()
        }
        done.wait()
        StandardOutput.line(#"{"msg":"stopped","signal":"\#(received == SIGTERM ? "SIGTERM" : "SIGINT")"}"#)
        return 0
    }

    private static func printError(_ message: String) {
        FileHandle.standardError.write(Data("switchboard-dev apns-emulator: \(message)\n".utf8))
    }

    /// A file named on the command line cannot be used (exit status 1).
    struct StartError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// The parsed options.
    struct Options {
        var host = "127.0.0.1"
        var port = 2197
        var bundleID: String?
        var teamID: String?
        var keyID: String?
        var publicKeyFile: String?
        var faultsFile: String?
        var tls = false
        var caOut: String?
        var maxConcurrentStreams = 1000
        var inboxCapacity = 1000
        var fcmServiceAccountFile: String?
        var huaweiApp: HuaweiEmulatorApp?
        var xiaomiApp: XiaomiEmulatorApp?
        var oppoApp: OPPOEmulatorApp?
        var vivoApp: VivoEmulatorApp?
        var verbose = false

        init(parsing arguments: [String]) throws(UsageError) {
            var scanner = ArgumentScanner(arguments)
            while let flag = scanner.nextFlag() {
                switch flag {
                case "--listen":
                    (host, port) = try Self.hostAndPort(try scanner.value(for: flag))
                case "--bundle-id": bundleID = try scanner.value(for: flag)
                case "--team-id": teamID = try scanner.value(for: flag)
                case "--key-id": keyID = try scanner.value(for: flag)
                case "--public-key": publicKeyFile = try scanner.value(for: flag)
                case "--faults": faultsFile = try scanner.value(for: flag)
                case "--tls": tls = true
                case "--ca-out": caOut = try scanner.value(for: flag)
                case "--max-concurrent-streams": maxConcurrentStreams = try scanner.positiveInteger(for: flag)
                case "--inbox-capacity": inboxCapacity = try scanner.positiveInteger(for: flag)
                case "--fcm-service-account": fcmServiceAccountFile = try scanner.value(for: flag)
                case "--huawei-app":
                    let text = try scanner.value(for: flag)
                    let parts = text.split(separator: ":", maxSplits: 1)
                    guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                        throw UsageError(message: "--huawei-app needs APP_ID:SECRET")
                    }
                    huaweiApp = HuaweiEmulatorApp(appID: String(parts[0]), appSecret: String(parts[1]))
                case "--xiaomi-app":
                    let parts = try Self.parts(
                        try scanner.value(for: flag), count: 2, flag: flag, shape: "PACKAGE:SECRET")
                    xiaomiApp = XiaomiEmulatorApp(packageName: parts[0], appSecret: parts[1])
                case "--oppo-app":
                    let parts = try Self.parts(
                        try scanner.value(for: flag), count: 2, flag: flag, shape: "APP_KEY:MASTER_SECRET")
                    oppoApp = OPPOEmulatorApp(appKey: parts[0], masterSecret: parts[1])
                case "--vivo-app":
                    let parts = try Self.parts(
                        try scanner.value(for: flag), count: 3, flag: flag, shape: "APP_ID:APP_KEY:SECRET")
                    vivoApp = VivoEmulatorApp(appID: parts[0], appKey: parts[1], appSecret: parts[2])
                case "--verbose": verbose = true
                default: throw scanner.unknown(flag)
                }
            }
            if caOut != nil, !tls { throw UsageError(message: "--ca-out needs --tls") }
        }

        /// `HOST:PORT`, `[IPV6]:PORT`, or `:PORT` (host 127.0.0.1).
        static func hostAndPort(_ text: String) throws(UsageError) -> (String, Int) {
            let host: String
            let portText: Substring
            if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
                host = String(text[text.index(after: text.startIndex)..<close])
                let rest = text[text.index(after: close)...]
                guard rest.hasPrefix(":") else { throw UsageError(message: "--listen needs HOST:PORT, not '\(text)'") }
                portText = rest.dropFirst()
            } else {
                guard let colon = text.lastIndex(of: ":") else {
                    throw UsageError(message: "--listen needs HOST:PORT, not '\(text)'")
                }
                let name = String(text[..<colon])
                host = name.isEmpty ? "127.0.0.1" : name
                portText = text[text.index(after: colon)...]
            }
            guard let port = Int(portText), (0...65535).contains(port) else {
                throw UsageError(message: "--listen port must be 0...65535, not '\(portText)'")
            }
            return (host, port)
        }

        /// The emulator configuration, reading the key and fault files.
        func configuration() throws -> APNsEmulatorConfiguration {
            var configuration = APNsEmulatorConfiguration(host: host, port: port)
            configuration.bundleID = bundleID
            configuration.teamID = teamID
            configuration.keyID = keyID
            configuration.maxConcurrentStreams = maxConcurrentStreams
            configuration.inboxCapacity = inboxCapacity
            if let publicKeyFile {
                let pem = String(decoding: try Self.read(publicKeyFile, for: "--public-key"), as: UTF8.self)
                do {
                    configuration.publicKey = try ES256PublicKey(pem: pem)
                } catch {
                    throw StartError(message: "--public-key \(publicKeyFile): \(error)")
                }
            }
            if let faultsFile {
                let bytes = try Self.read(faultsFile, for: "--faults")
                do {
                    configuration.faults = try APNsFault.parseScript(bytes)
                } catch {
                    throw APNsFaultScriptError(message: "\(faultsFile): \(error.message)")
                }
            }
            if let fcmServiceAccountFile {
                do {
                    configuration.fcmAccount = try FCMEmulatorAccount(
                        serviceAccountJSON: try Self.read(fcmServiceAccountFile, for: "--fcm-service-account"))
                } catch let error as StartError {
                    throw error
                } catch {
                    throw StartError(message: "--fcm-service-account \(fcmServiceAccountFile): \(error)")
                }
            }
            configuration.huaweiApp = huaweiApp
            configuration.xiaomiApp = xiaomiApp
            configuration.oppoApp = oppoApp
            configuration.vivoApp = vivoApp
            if tls { configuration.tls = APNsEmulatorTLS() }
            if verbose { configuration.log = { StandardOutput.line($0) } }
            return configuration
        }

        /// `count` non-empty parts separated by `:` (the last may hold more colons).
        private static func parts(
            _ text: String, count: Int, flag: String, shape: String
        ) throws(UsageError) -> [String] {
            let parts = text.split(separator: ":", maxSplits: count - 1, omittingEmptySubsequences: false).map(
                String.init)
            guard parts.count == count, parts.allSatisfy({ !$0.isEmpty }) else {
                throw UsageError(message: "\(flag) needs \(shape)")
            }
            return parts
        }

        private static func read(_ path: String, for flag: String) throws(StartError) -> [UInt8] {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw StartError(message: "cannot read \(flag) file \(path)")
            }
            return [UInt8](data)
        }
    }
}

/// Whole lines to standard output, each with one `write(2)` so lines from the loop thread
/// and the main thread never interleave.
enum StandardOutput {
    static func line(_ text: String) {
        let bytes = Array((text + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(STDOUT_FILENO, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
