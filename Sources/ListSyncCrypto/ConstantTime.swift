/// Comparisons whose running time does not depend on the bytes compared (MACs, tags).
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes, reading every byte whatever the contents (no early exit
    /// on the first difference); collections of different lengths are unequal (the lengths are not secret).
    ///
    /// - Complexity: O(n), where n is the length of the collections.
    public static func equals(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        return withBytes(a) { pa in
            withBytes(b) { pb in
                var diff: UInt8 = 0
                for i in 0..<pa.count { diff |= pa[i] ^ pb[i] }
                return isZero(diff)
            }
        }
    }

    /// `diff == 0` without a data-dependent branch before the result.
    @inline(never)
    static func isZero(_ diff: UInt8) -> Bool {
        // (diff - 1) has its top bit set only when diff was 0 (computed in 16 bits).
        ((UInt16(diff) &- 1) >> 15) == 1
    }
}
