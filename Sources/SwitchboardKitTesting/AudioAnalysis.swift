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

    /// The ear against the mouth's sound as the relay's 8 kHz band lets it through (the same
    /// round trip through the resampler, offline): the mouth-to-ear delay that lines them up,
    /// and the signal-to-noise ratio once lined up (what the network, the relay and the jitter
    /// buffer did to it, not what the band cut). `maxLag` bounds the delay searched (48 kHz
    /// samples; 14,400 is 300 ms).
    public static func compareThroughTheBand(mouth: [Float], ear: [Float], maxLag: Int = 14_400) -> (delayMilliseconds: Double, snr: Double) {
        var down = AudioResampler.Downsampler(), up = AudioResampler.Upsampler()
        let reference = up.process(down.process(mouth))  // 287 samples behind the mouth
        let lag = bestLag(of: reference, in: ear, maxLag: maxLag, window: min(24_000, max(0, ear.count - maxLag)))
        var signal = 0.0, noise = 0.0
        for index in maxLag..<min(ear.count, reference.count + lag) where index - lag >= 0 {
            let expected = Double(reference[index - lag])
            signal += expected * expected
            noise += (Double(ear[index]) - expected) * (Double(ear[index]) - expected)
        }
        return (Double(lag + 287) / 48, 10 * log10(max(signal, 1e-12) / max(noise, 1e-12)))
    }
}
