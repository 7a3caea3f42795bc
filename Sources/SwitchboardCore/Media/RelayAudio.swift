/// The built-in relay's audio format (SPEC §10): 8 kHz mono, 16-bit little-endian PCM, in
/// frames of 20 ms — 160 samples, 320 bytes, one WebSocket binary message each.
public enum RelayAudioFormat {
    public static let sampleRate = 8_000
    public static let frameMilliseconds = 20
    public static let samplesPerFrame = sampleRate * frameMilliseconds / 1000
    public static let bytesPerFrame = samplesPerFrame * 2

    /// The samples of one frame's bytes (little-endian).
    public static func samples(_ bytes: [UInt8]) -> [Int16] {
        var samples = [Int16](repeating: 0, count: bytes.count / 2)
        for index in samples.indices {
            samples[index] = Int16(bitPattern: UInt16(bytes[2 * index]) | UInt16(bytes[2 * index + 1]) << 8)
        }
        return samples
    }

    /// The bytes of samples (little-endian).
    public static func bytes(_ samples: [Int16]) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: samples.count * 2)
        for (index, sample) in samples.enumerated() {
            let bits = UInt16(bitPattern: sample)
            bytes[2 * index] = UInt8(bits & 0xFF)
            bytes[2 * index + 1] = UInt8(bits >> 8)
        }
        return bytes
    }
}

/// Mixes a group's audio: each participant hears the sum of everyone else (N−1), summed in
/// 32 bits and saturated to 16, so loud voices clip instead of wrapping around into noise.
public enum AudioMixer {
    /// For each input frame (nil: that participant sent nothing this tick), the mix of all the
    /// others, or nil when none of the others sent anything (nothing to hear: the receiver's
    /// jitter buffer plays silence). Frames are `RelayAudioFormat.samplesPerFrame` long. Costs
    /// one pass over the inputs plus one per output, not N².
    public static func mixMinusOne(_ frames: [[Int16]?]) -> [[Int16]?] {
        let speakers = frames.reduce(0) { $0 + ($1 == nil ? 0 : 1) }
        let length = RelayAudioFormat.samplesPerFrame
        var total = [Int32](repeating: 0, count: length)
        for case let frame? in frames {
            for index in 0..<min(length, frame.count) { total[index] += Int32(frame[index]) }
        }
        return frames.map { own -> [Int16]? in
            if speakers - (own == nil ? 0 : 1) == 0 { return nil }
            var mixed = [Int16](repeating: 0, count: length)
            for index in 0..<length {
                let others = total[index] - (own.map { index < $0.count ? Int32($0[index]) : 0 } ?? 0)
                mixed[index] = Int16(clamping: others)
            }
            return mixed
        }
    }
}

/// A participant's frames waiting for the mixer's next tick: at most `capacity`, so a sender
/// whose clock runs fast (or whose frames arrive in a burst) adds no more delay than that; the
/// oldest frame goes first when it is full.
public struct RelayFrameQueue: Sendable {
    public let capacity: Int
    private var frames: [[Int16]] = []
    /// Frames dropped because the queue was full.
    public private(set) var droppedLate = 0

    public init(capacity: Int) { self.capacity = max(1, capacity) }

    public var count: Int { frames.count }

    public mutating func push(_ frame: [Int16]) {
        if frames.count >= capacity {
            frames.removeFirst()
            droppedLate += 1
        }
        frames.append(frame)
    }

    /// The oldest frame, or nil when the participant sent nothing since the last tick.
    public mutating func pop() -> [Int16]? {
        frames.isEmpty ? nil : frames.removeFirst()
    }

    public mutating func removeAll() { frames.removeAll() }
}
