import ListSyncCrypto

// W11.crypto: the throughput of the daemon's crypto (ListSyncCrypto), in MB/s (10^6 bytes per second):
// SHA-256 over a 1 MiB buffer, ChaCha20-Poly1305 seal and open of one 1 MiB buffer and of 1 KiB frames
// (each frame with its own nonce(counter:) and a 16-byte aad, as the transport's frames, Docs/Transport.md). Inputs are made
// untimed; every run is checked (the opened frames equal the plaintext).

/// Best of up to this many runs, as W2's loads.
let w11Runs = 5

func w11Crypto() throws -> BenchResult {
    let bigSize = 1 << 20, frameSize = 1 << 10, frames = 1024
    let key = (0..<32).map { UInt8($0) }
    let aead = try ChaCha20Poly1305(key: key)
    let big = (0..<bigSize).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    let aad = [UInt8](repeating: 0xa5, count: 16)
    let nonces = (0..<UInt64(frames)).map { ChaCha20Poly1305.nonce(counter: $0) }
    let bigNonce = ChaCha20Poly1305.nonce(counter: 1 << 40)

    /// MB/s of `bytes` bytes in `ns` nanoseconds.
    func mbs(_ bytes: Int, _ ns: UInt64) -> Double { Double(bytes) / Double(max(ns, 1)) * 1e3 }

    // SHA-256: 16 passes over the buffer per run.
    var digest: [UInt8] = []
    let sha = Repeat.fastest(reps: w11Runs, time: { Double($0) }) { () -> UInt64 in
        let t0 = nowNs()
        for _ in 0..<16 { digest = SHA256.hash(big) }
        return nowNs() - t0
    }
    // 1 MiB seal and open: 16 of each per run.
    var sealedBig: [UInt8] = []
    let sealBig = try Repeat.fastest(reps: w11Runs, time: { Double($0) }) { () throws -> UInt64 in
        let t0 = nowNs()
        for _ in 0..<16 { sealedBig = try aead.seal(big, nonce: bigNonce, authenticating: aad) }
        return nowNs() - t0
    }
    var bigOK = true
    let openBig = try Repeat.fastest(reps: w11Runs, time: { Double($0) }) { () throws -> UInt64 in
        var opened: [UInt8] = []
        let t0 = nowNs()
        for _ in 0..<16 { opened = try aead.open(sealedBig, nonce: bigNonce, authenticating: aad) }
        let ns = nowNs() - t0
        bigOK = bigOK && opened == big
        return ns
    }
    // 1 KiB frames: 1,024 frames of the buffer per run, one nonce each.
    let plainFrames = (0..<frames).map { Array(big[($0 * frameSize)..<(($0 + 1) * frameSize)]) }
    var sealedFrames: [[UInt8]] = Array(repeating: [], count: frames)
    let seal1k = try Repeat.fastest(reps: w11Runs, time: { Double($0) }) { () throws -> UInt64 in
        let t0 = nowNs()
        for i in 0..<frames { sealedFrames[i] = try aead.seal(plainFrames[i], nonce: nonces[i], authenticating: aad) }
        return nowNs() - t0
    }
    var framesOK = true
    let open1k = try Repeat.fastest(reps: w11Runs, time: { Double($0) }) { () throws -> UInt64 in
        var opened: [[UInt8]] = Array(repeating: [], count: frames)
        let t0 = nowNs()
        for i in 0..<frames { opened[i] = try aead.open(sealedFrames[i], nonce: nonces[i], authenticating: aad) }
        let ns = nowNs() - t0
        framesOK = framesOK && opened == plainFrames
        return ns
    }

    var res = BenchResult(workload: "W11.crypto", ops: frames)
    res.set("sha256_mb_s", mbs(16 * bigSize, sha.best))
    res.set("aead_seal_mb_s", mbs(16 * bigSize, sealBig.best))
    res.set("aead_open_mb_s", mbs(16 * bigSize, openBig.best))
    res.set("aead_seal_1k_mb_s", mbs(frames * frameSize, seal1k.best))
    res.set("aead_open_1k_mb_s", mbs(frames * frameSize, open1k.best))
    res.set("ns_per_1k_frame_seal", Double(seal1k.best) / Double(frames))
    res.ok = digest.count == 32 && sealedBig.count == bigSize + 16 && bigOK && framesOK
    res.note = "MB = 10^6 bytes; sha256 and aead_*: 16 x 1 MiB per run; *_1k: 1,024 frames of 1 KiB per run "
        + "(nonce(counter:), 16-byte aad, tag appended); each \(Repeat.note(w11Runs, min(sha.runs, seal1k.runs))); "
        + "every open checked against the plaintext"
    return res
}
