#if canImport(Darwin)
import Darwin
#else
import Synchronization
#endif

/// A lock-free ring of audio samples for exactly one producer thread and one consumer thread:
/// what an audio callback may touch. `write` and `read` take no lock, allocate nothing and
/// call nothing that can block; they copy samples and move one index each with an atomic
/// store (release) after reading the other side's with an atomic load (acquire).
///
/// The capacity is rounded up to a power of two. A write into a full ring keeps what fits and
/// reports how much that was (the caller counts the rest as dropped); a read from a short ring
/// reads what there is.
///
/// ```swift
/// let ring = AudioRing(capacity: 4096)
/// // the audio thread:           // the other thread:
/// ring.write(samples, count: n)  let got = ring.read(into: buffer, count: 480)
/// ```
// @unchecked Sendable: `storage` is written only by the producer in the slots between the
// consumer's index and its own, and read only by the consumer in the slots between its index
// and the producer's; each index is written by one side only, and published with release
// ordering after the samples it covers were copied, read with acquire ordering before they are.
public final class AudioRing: @unchecked Sendable {
    public let capacity: Int
    private let mask: Int
    private let storage: UnsafeMutablePointer<Float>
    /// Samples written so far (the producer's index), and read so far (the consumer's).
    private let written = SampleIndex()
    private let consumed = SampleIndex()
    /// The largest `count` a read asked for (the consumer's; a render callback's buffer size).
    private let largestAsk = SampleIndex()

    public init(capacity: Int) {
        var size = 1
        while size < max(capacity, 2) { size <<= 1 }
        self.capacity = size
        mask = size - 1
        storage = .allocate(capacity: size)
        storage.initialize(repeating: 0, count: size)
    }

    deinit { storage.deallocate() }

    /// Samples the consumer may read now.
    public var available: Int { written.load() - consumed.load() }

    /// Room the producer may write into now.
    public var space: Int { capacity - available }

    /// The largest number of samples one read has asked for: how far ahead a producer must keep
    /// the ring for a consumer that reads a buffer at a time.
    public var largestRead: Int { largestAsk.load() }

    /// Producer only: copies up to `count` samples in; returns how many fit.
    @discardableResult
    public func write(_ source: UnsafePointer<Float>, count: Int) -> Int {
        let head = written.load(), tail = consumed.load()
        let n = min(max(count, 0), capacity - (head - tail))
        guard n > 0 else { return 0 }
        let start = head & mask, first = min(n, capacity - start)
        (storage + start).update(from: source, count: first)
        if n > first { storage.update(from: source + first, count: n - first) }
        written.store(head + n)
        return n
    }

    /// Producer only: `write` from an array (for threads that are not real-time).
    @discardableResult
    public func write(_ samples: [Float]) -> Int {
        samples.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            return write(base, count: buffer.count)
        }
    }

    /// Consumer only: copies up to `count` samples out; returns how many there were.
    @discardableResult
    public func read(into destination: UnsafeMutablePointer<Float>, count: Int) -> Int {
        if count > largestAsk.load() { largestAsk.store(count) }
        let tail = consumed.load(), head = written.load()
        let n = min(max(count, 0), head - tail)
        guard n > 0 else { return 0 }
        let start = tail & mask, first = min(n, capacity - start)
        destination.update(from: storage + start, count: first)
        if n > first { (destination + first).update(from: storage, count: n - first) }
        consumed.store(tail + n)
        return n
    }

    /// Consumer only: drops what is there (as if read).
    public func skipAll() { consumed.store(written.load()) }
}

/// One side's index of an ``AudioRing``: a word loaded with acquire and stored with release
/// ordering, without a lock. On Linux `Synchronization.Atomic`; on Apple platforms the
/// OSAtomic barrier functions, which every iOS the SDK supports has (`Atomic` needs iOS 18).
// @unchecked Sendable: on Apple platforms the word lives behind a pointer allocated in `init`
// and freed in `deinit`, and every read and write of it after `init` goes through an OSAtomic
// barrier function (a lock-free atomic operation with a full barrier); on Linux it is an
// `Atomic<Int>`, itself Sendable.
final class SampleIndex: @unchecked Sendable {
    #if canImport(Darwin)
    private let word: UnsafeMutablePointer<Int64>
    init() {
        word = .allocate(capacity: 1)
        word.initialize(to: 0)
    }
    deinit { word.deallocate() }
    /// A barrier read (adding zero returns the value, with a full barrier).
    func load() -> Int { Int(OSAtomicAdd64Barrier(0, word)) }
    /// A barrier write by the index's only writer: the compare-and-swap cannot lose a race.
    func store(_ value: Int) {
        while !OSAtomicCompareAndSwap64Barrier(OSAtomicAdd64Barrier(0, word), Int64(value), word) {}
    }
    #else
    private let word = Atomic<Int>(0)
    func load() -> Int { word.load(ordering: .acquiring) }
    func store(_ value: Int) { word.store(value, ordering: .releasing) }
    #endif
}
