/// Random bytes for keys and nonces, from the operating system's generator.
public enum SecureRandom {
    /// `count` bytes from `SystemRandomNumberGenerator` (the kernel's CSPRNG: `getrandom` on Linux,
    /// `arc4random_buf` on Apple platforms).
    ///
    /// - Complexity: O(count).
    public static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "negative byte count")
        var generator = SystemRandomNumberGenerator()
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var i = 0
            while i < count {
                var word = generator.next()
                let n = min(8, count - i)
                withUnsafeBytes(of: &word) { w in
                    for j in 0..<n { buffer[i + j] = w[j] }
                }
                i += n
            }
            initialized = count
        }
    }
}
