import Foundation
import SwitchboardKit

/// Measures what a call did to sound: how late it arrived and how much of it survived.
///
/// ```swift
/// let mouth = AudioAnalysis.pseudoSpeech(seconds: 2)
/// ... // through the call
/// let (delay, snr) = AudioAnalysis.compareThroughTheBand(mouth: mouth, ear: heard)
/// ```
public enum AudioAnalysis {
    /// Deterministic noise-like sound at 48 kHz: its cross-correlation peaks only at the true
    /// delay (a pure tone would match every period).
    public static func pseudoSpeech(seconds: Double, level: Float = 0.3, seed: UInt64 = 42) -> [Float] {
        var state = seed
        return (0..<Int(48_000 * seconds)).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var mixed = state
            mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
            mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
            mixed ^= mixed >> 31
            return level * (Float(mixed >> 40) / Float(1 << 24) * 2 - 1)
        }
    }

    /// The lag (in samples) at which `ear` best matches `mouth`: the peak of their normalised
    /// cross-correlation over `window` samples of the ear starting at `maxLag`.
    public static func bestLag(of mouth: [Float], in ear: [Float], maxLag: Int, window: Int) -> Int {
        var best = 0, bestScore = -Double.infinity
        for lag in 0..<maxLag {
            var dot = 0.0, energy = 0.0
            var index = maxLag
            while index < min(ear.count, maxLag + window) {
                let source = index - lag
                if source >= 0, source < mouth.count {
                    dot += Double(ear[index]) * Double(mouth[source])
                    energy += Double(mouth[source]) * Double(mouth[source])
                }
                index += 4
            }
            let score = energy > 0 ? dot / energy.squareRoot() : 0
            if score > bestScore {
                bestScore = score
                best = lag
            }
        }
        return best
    }

    /// What the ear got, against the mouth's sound as the relay's 8 kHz band lets it through
    /// (the same round trip through the resampler, offline).
    public struct Comparison: Sendable, Equatable {
        /// The mouth-to-ear delay: the median over the 20 ms pieces of sound (a jitter buffer
        /// moves its delay by whole frames as the network changes).
        public var delayMilliseconds: Double
        /// The delay that lined up the start of the sound.
        public var initialDelayMilliseconds: Double
        /// The signal-to-noise ratio over the whole sound at the initial delay: what the
        /// network, the relay and the jitter buffer did to it (not what the band cut). One
        /// concealed gap, or a delay that moved by a frame, already costs tens of decibels.
        public var snr: Double
        /// The median SNR of the 20 ms pieces that carry sound, each lined up on its own (at the
        /// initial delay give or take whole frames): how well most of the sound arrived.
        public var medianSegmentSNR: Double
    }

    /// Compares `ear` with `mouth`. `maxLag` bounds the delay searched (48 kHz samples; 24,000
    /// is 500 ms); the ear's samples from `maxLag` on must hold sound that does not repeat
    /// (noise-like, or speech; a pure tone would match every period).
    public static func compareThroughTheBand(mouth: [Float], ear: [Float], maxLag: Int = 14_400) -> Comparison {
        var down = AudioResampler.Downsampler(), up = AudioResampler.Upsampler()
        let reference = up.process(down.process(mouth))  // 287 samples behind the mouth
        let lag = bestLag(of: reference, in: ear, maxLag: maxLag, window: min(24_000, max(0, ear.count - maxLag)))
        var signal = 0.0, noise = 0.0
        for index in maxLag..<min(ear.count, reference.count + lag) where index - lag >= 0 {
            let expected = Double(reference[index - lag])
            signal += expected * expected
            noise += (Double(ear[index]) - expected) * (Double(ear[index]) - expected)
        }
        // Piece by piece: the reference's 20 ms pieces, each found in the ear at the initial
        // delay moved by -5…+15 frames, whichever matches best.
        let frame = 960
        var segments: [(snr: Double, lag: Int)] = []
        var start = 0
        // Ties (within a decibel: a periodic sound matches at several shifts) go to the shift
        // closest to the last piece's, so the delay moves only when the sound says it did.
        var previous = 0
        while start + frame <= reference.count {
            var energy = 0.0
            for index in start..<(start + frame) { energy += Double(reference[index]) * Double(reference[index]) }
            if energy / Double(frame) > 1e-6 {
                var best: (snr: Double, lag: Int, shift: Int)?
                for shift in -5...15 {
                    let offset = lag + shift * frame
                    guard start + offset >= 0, start + offset + frame <= ear.count else { continue }
                    var error = 0.0
                    for index in start..<(start + frame) {
                        let difference = Double(ear[index + offset]) - Double(reference[index])
                        error += difference * difference
                    }
                    let snr = 10 * log10(energy / max(error, 1e-12))
                    if let current = best {
                        let better = snr > current.snr + 1
                        let tieButCloser =
                            abs(snr - current.snr) <= 1 && abs(shift - previous) < abs(current.shift - previous)
                        if better || tieButCloser { best = (snr, offset, shift) }
                    } else {
                        best = (snr, offset, shift)
                    }
                }
                if let best {
                    segments.append((best.snr, best.lag))
                    previous = best.shift
                }
            }
            start += frame
        }
        let snrs = segments.map(\.snr).sorted(), lags = segments.map(\.lag).sorted()
        return Comparison(
            delayMilliseconds: lags.isEmpty ? Double(lag + 287) / 48 : Double(lags[lags.count / 2] + 287) / 48,
            initialDelayMilliseconds: Double(lag + 287) / 48,
            snr: 10 * log10(max(signal, 1e-12) / max(noise, 1e-12)),
            medianSegmentSNR: snrs.isEmpty ? -.infinity : snrs[snrs.count / 2])
    }
}
