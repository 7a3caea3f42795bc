import Foundation
import Glibc
import Synchronization
import SwitchboardCLI
import SwitchboardKit
import SwitchboardKitTesting
import SwitchboardTesting

/// `switchboard-dev phone`: one Swift SDK phone in real time — a user's `SwitchboardClient` and
/// a `RelayMediaSession` whose microphone plays a file and whose speaker is recorded — that
/// answers the next call or places one. For trying the relay against other clients (the
/// browser tests call it and are called by it).
public enum PhoneCommand {
    /// The `--help` text.
    public static let help = """
        Usage: switchboard-dev phone --server URL --username NAME --password PASSWORD
                                     (--answer | --call USERNAME) [--play FILE] [--record FILE]
                                     [--seconds N]

        A Swift SDK phone with the relay's audio in real time: it signs in, then answers the
        next call that rings it (--answer) or calls a friend by username (--call), talks for
        --seconds, hangs up and exits. Its microphone plays --play, looped; what its speaker
        plays is written to --record. Both are raw audio: 48 kHz, mono, signed 16-bit
        little-endian (sox -t raw -r 48000 -e signed -b 16 -c 1). It prints one JSON line per
        step on standard output:
          {"event":"signed-in","userId":"…"}
          {"event":"ringing","callId":"…"}          (--answer: a call rings it)
          {"event":"connected","callId":"…"}        (its audio runs)
          {"event":"ended","callId":"…","framesSent":N,"framesReceived":N,"framesPlayed":N}

        Options:
          --server URL        the server (http://HOST:PORT)
          --username NAME, --password PASSWORD   the account to sign in with
          --answer            wait (up to 120 s) for a call that rings this user, and answer it
          --call USERNAME     call this friend (audio), and wait (up to 60 s) for the answer
          --play FILE         what the microphone takes in (default silence)
          --record FILE       where what the speaker played goes
          --seconds N         how long to talk once connected (default 5)
          -h, --help          show this help

        Exit status: 0 after the call, 1 when the call could not be made or answered, 2 for bad
        usage.
        """

    struct Options: Sendable {
        var server: URL
        var username: String
        var password: String
        var callee: String?
        var play: [Float] = []
        var record: String?
        var seconds = 5.0
    }

    /// Runs the command with the arguments that follow `phone`; returns the exit status.
    public static func run(_ arguments: [String]) -> Int32 {
        let options: Options
        switch CommandStart(arguments, command: "phone", help: help, parse: parse) {
        case .run(let parsed): options = parsed
        case .exit(let status): return status
        }
        return waitForExitCode {
            do {
                try await talk(options)
                return 0
            } catch {
                FileHandle.standardError.write(Data("switchboard-dev phone: \(error)\n".utf8))
                return 1
            }
        }
    }

    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        var server: URL?, username: String?, password: String?, callee: String?, answer = false
        var play: String?, record: String?, seconds = 5.0
        var scanner = ArgumentScanner(arguments)
        while let flag = scanner.nextFlag() {
            switch flag {
            case "--server":
                let text = try scanner.value(for: flag)
                guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                    throw UsageError(message: "--server needs an http(s) URL, not '\(text)'")
                }
                server = url
            case "--username": username = try scanner.value(for: flag)
            case "--password": password = try scanner.value(for: flag)
            case "--call": callee = try scanner.value(for: flag)
            case "--answer": answer = true
            case "--play": play = try scanner.value(for: flag)
            case "--record": record = try scanner.value(for: flag)
            case "--seconds":
                let text = try scanner.value(for: flag)
                guard let value = Double(text), value > 0, value <= 600 else {
                    throw UsageError(message: "--seconds needs a number from 0 to 600, not '\(text)'")
                }
                seconds = value
            default: throw scanner.unknown(flag)
            }
        }
        guard let server, let username, let password else {
            throw UsageError(message: "--server, --username and --password are required")
        }
        guard answer != (callee != nil) else { throw UsageError(message: "give one of --answer and --call USERNAME") }
        var options = Options(server: server, username: username, password: password, callee: callee)
        options.record = record
        options.seconds = seconds
        if let play {
            guard let data = FileManager.default.contents(atPath: play) else {
                throw UsageError(message: "cannot read --play \(play)")
            }
            options.play = stride(from: 0, to: data.count - 1, by: 2).map {
                Float(Int16(bitPattern: UInt16(data[$0]) | UInt16(data[$0 + 1]) << 8)) / 32768
            }
        }
        return options
    }

    static func say(_ fields: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys]) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    static func talk(_ options: Options) async throws {
        let session = try await SwitchboardClient(baseURL: options.server).login(
            username: options.username, password: options.password)
        let client = SwitchboardClient(baseURL: options.server, token: session.token)
        say(["event": "signed-in", "userId": session.user.id])
        let (callID, media) =
            if let callee = options.callee {
                try await place(client, callee: callee)
            } else {
                try await answer(client, user: session.user.id, after: session.eventCursor)
            }
        let io = SimulatedAudioIO()
        let audio = RelayMediaSession(server: options.server, transport: WebSocketRelayTransport(), audio: io)
        try await audio.join(url: media.url, token: media.token)
        audio.startAudio()
        say(["event": "connected", "callId": callID])
        let play = options.play, seconds = options.seconds
        let heard = await offPool { () -> [Float] in
            // A frame of 20 ms every 20 ms of the wall clock, as an audio engine does.
            let step = 960, steps = Int(seconds * 50)
            var heard: [Float] = []
            heard.reserveCapacity(steps * step)
            let start = DispatchTime.now().uptimeNanoseconds
            for index in 0..<steps {
                let due = start + UInt64(index) * 20_000_000, now = DispatchTime.now().uptimeNanoseconds
                if due > now { usleep(UInt32((due - now) / 1000)) }
                if play.isEmpty {
                    io.speak([Float](repeating: 0, count: step))
                } else {
                    io.speak((0..<step).map { play[(index * step + $0) % play.count] })
                }
                heard += io.listen(step)
            }
            return heard
        }
        let statistics = audio.statistics
        audio.leave()
        _ = try? await client.perform(.leave, onCall: callID)
        if let record = options.record {
            var bytes = Data(capacity: heard.count * 2)
            for sample in heard {
                let value = UInt16(bitPattern: Int16(max(-32768, min(32767, (sample * 32768).rounded()))))
                bytes.append(UInt8(value & 0xff))
                bytes.append(UInt8(value >> 8))
            }
            guard FileManager.default.createFile(atPath: record, contents: bytes) else {
                throw UsageError(message: "cannot write --record \(record)")
            }
        }
        say([
            "event": "ended", "callId": callID, "framesSent": statistics.sent,
            "framesReceived": statistics.playout.received, "framesPlayed": statistics.playout.played,
        ])
    }

    /// Calls a friend; returns once the callee answered (the held media-token request).
    static func place(_ client: SwitchboardClient, callee: String) async throws -> (String, MediaToken) {
        guard let friend = try await client.friends().first(where: { $0.user.username == callee }) else {
            throw UsageError(message: "'\(callee)' is not a friend of this user")
        }
        let call = try await client.createCall(scopeKind: .conversation, scopeID: friend.conversationId, mode: .audio)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            do {
                return (call.id, try await client.mediaToken(forCall: call.id, waitingUpTo: 25))
            } catch let error as SwitchboardAPIError where error.status == 403 {
                guard try await client.call(call.id).state == .ringing else { throw error }
            }
        }
        throw UsageError(message: "nobody answered within 60 s")
    }

    /// Waits for a call that rings `user`, and answers it with the media token.
    static func answer(
        _ client: SwitchboardClient, user: String, after cursor: Int64
    ) async throws -> (
        String, MediaToken
    ) {
        var cursor = cursor
        let deadline = Date().addingTimeInterval(120)
        while Date() < deadline {
            let page = try await client.events(after: cursor, wait: 20)
            cursor = page.cursor
            for event in page.events where event.kind == .callChanged {
                guard let id = event.callId, let call = try? await client.call(id), call.state == .ringing,
                    call.invitations.contains(where: { $0.userId == user && $0.state == .ringing })
                else { continue }
                say(["event": "ringing", "callId": id])
                let answer = try await client.accept(id, withMediaToken: true)
                if let media = answer.media { return (id, media) }
                return (id, try await client.mediaToken(forCall: id))
            }
        }
        throw UsageError(message: "no call rang within 120 s")
    }
}
