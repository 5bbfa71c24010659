/// FNV-1a, 64 bits: a hash that is the same in every process (Swift's `Hasher` is seeded per
/// process), cheap enough to run over whole transition tables. Each `combine` folds in one
/// value whole (xor, then multiply by the FNV prime); byte-wise FNV-1a is `combine` of each byte.
struct FNV1a {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    @inline(__always)
    mutating func combine(_ word: UInt64) {
        value = (value ^ word) &* 0x100_0000_01b3
    }

    /// Folds in a 32-bit integer's bit pattern (a state number, −1 included).
    @inline(__always)
    mutating func combine(_ state: Int32) {
        combine(UInt64(UInt32(bitPattern: state)))
    }
}
