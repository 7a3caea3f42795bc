import Foundation

/// Converts between the relay's 8 kHz and a device's 48 kHz (a factor of 6) with a polyphase
/// low-pass FIR: a Kaiser-windowed sinc of 288 taps (β = 8, about 80 dB of stopband), cut off at
/// 3.95 kHz. It is flat (±0.1 dB) across the telephone band (300–3,400 Hz) and stops what would
/// alias (above about 4.4 kHz) or image. Both directions keep their history across calls, so a
/// stream cut into any pieces comes out exactly as if processed whole. Group delay: 143.5
/// samples at 48 kHz (3 ms) each way.
///
/// ```swift
/// var down = AudioResampler.Downsampler()
/// let narrow = down.process(microphone48k)     // 1/6 as many samples
/// var up = AudioResampler.Upsampler()
/// let wide = up.process(frame8k)               // 6 times as many
/// ```
public enum AudioResampler {
    /// 48,000 / 8,000.
    public static let factor = 6
    static let tapsPerPhase = 48
    static let tapCount = factor * tapsPerPhase
    /// The prototype filter at 48 kHz, normalised to unity gain at DC.
    static let prototype: [Float] = design(cutoff: 3950, sampleRate: 48_000, taps: tapCount, beta: 8)
    /// The prototype split into its 6 phases, each times 6 (zero-stuffing's lost gain).
    static let phases: [[Float]] = (0..<factor).map { phase in
        (0..<tapsPerPhase).map { Float(factor) * prototype[$0 * factor + phase] }
    }

    /// A windowed-sinc low-pass: `taps` coefficients summing to 1.
    static func design(cutoff: Double, sampleRate: Double, taps: Int, beta: Double) -> [Float] {
        let middle = Double(taps - 1) / 2
        let normalised = 2 * cutoff / sampleRate
        let window0 = besselI0(beta)
        var coefficients = (0..<taps).map { index -> Double in
            let offset = Double(index) - middle
            let sinc = offset == 0 ? normalised : sin(Double.pi * normalised * offset) / (Double.pi * offset)
            let ratio = 2 * Double(index) / Double(taps - 1) - 1
            let window = besselI0(beta * (1 - ratio * ratio).squareRoot()) / window0
            return sinc * window
        }
        let sum = coefficients.reduce(0, +)
        coefficients = coefficients.map { $0 / sum }
        return coefficients.map(Float.init)
    }

    /// The modified Bessel function of the first kind, order 0 (its power series).
    static func besselI0(_ x: Double) -> Double {
        var sum = 1.0, term = 1.0
        let quarter = x * x / 4
        for k in 1..<64 {
            term *= quarter / Double(k * k)
            sum += term
            if term < sum * 1e-16 { break }
        }
        return sum
    }

    /// 8 kHz in, 48 kHz out: six outputs per input, one per phase of the filter.
    public struct Upsampler: Sendable {
        /// The last `tapsPerPhase - 1` inputs, oldest first.
        private var history = [Float](repeating: 0, count: AudioResampler.tapsPerPhase - 1)

        public init() {}

        public mutating func process(_ input: [Float]) -> [Float] {
            let taps = AudioResampler.tapsPerPhase
            var output = [Float](repeating: 0, count: input.count * AudioResampler.factor)
            var window = history + input
            window.withUnsafeMutableBufferPointer { samples in
                for index in input.indices {
                    // samples[index + taps - 1] is input[index], the newest for this step.
                    let newest = index + taps - 1
                    for phase in 0..<AudioResampler.factor {
                        let coefficients = AudioResampler.phases[phase]
                        var sum: Float = 0
                        for k in 0..<taps { sum += coefficients[k] * samples[newest - k] }
                        output[index * AudioResampler.factor + phase] = sum
                    }
                }
            }
            history = Array(window.suffix(taps - 1))
            return output
        }

        /// 16-bit samples in, 16-bit samples out (saturated).
        public mutating func process(_ input: [Int16]) -> [Int16] {
            AudioSamples.int16(process(AudioSamples.float(input)))
        }
    }

    /// 48 kHz in, 8 kHz out: one output per six inputs, any number of inputs per call.
    public struct Downsampler: Sendable {
        /// The last `tapCount - 1` inputs before `next`, then what came since.
        private var buffer = [Float](repeating: 0, count: AudioResampler.tapCount - 1)
        /// Where in `buffer` the next output's newest input sits.
        private var next = AudioResampler.tapCount - 1

        public init() {}

        public mutating func process(_ input: [Float]) -> [Float] {
            buffer += input
            let taps = AudioResampler.tapCount
            var output: [Float] = []
            output.reserveCapacity(input.count / AudioResampler.factor + 1)
            let filter = AudioResampler.prototype
            buffer.withUnsafeBufferPointer { samples in
                while next < samples.count {
                    var sum: Float = 0
                    for n in 0..<taps { sum += filter[n] * samples[next - n] }
                    output.append(sum)
                    next += AudioResampler.factor
                }
            }
            let drop = next - (taps - 1)
            if drop > 0 {
                buffer.removeFirst(drop)
                next -= drop
            }
            return output
        }

        public mutating func process(_ input: [Int16]) -> [Int16] {
            AudioSamples.int16(process(AudioSamples.float(input)))
        }
    }
}

/// Conversions between 16-bit PCM (the wire) and Float samples in -1...1 (audio engines).
public enum AudioSamples {
    public static func float(_ samples: [Int16]) -> [Float] { samples.map { Float($0) / 32768 } }

    /// Saturated: a sample beyond ±1 clips instead of wrapping around; one that is not a
    /// number (NaN, infinity) is silence.
    public static func int16(_ samples: [Float]) -> [Int16] {
        samples.map { $0.isFinite ? Int16(clamping: Int(($0 * 32768).rounded())) : 0 }
    }

    /// Little-endian bytes (the relay's frame format).
    public static func bytes(_ samples: [Int16]) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: samples.count * 2)
        for (index, sample) in samples.enumerated() {
            let bits = UInt16(bitPattern: sample)
            bytes[2 * index] = UInt8(bits & 0xFF)
            bytes[2 * index + 1] = UInt8(bits >> 8)
        }
        return bytes
    }

    public static func samples(_ bytes: [UInt8]) -> [Int16] {
        (0..<bytes.count / 2).map { Int16(bitPattern: UInt16(bytes[2 * $0]) | UInt16(bytes[2 * $0 + 1]) << 8) }
    }
}
