import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Gives the C allocator's free memory back to the system after a large free (a compaction drops
/// a document's old history and the copies it was rebuilt through at once).
///
/// glibc keeps freed memory in its arenas: a daemon that compacted a busy document at a stable
/// prefix kept its resident size near the compaction's peak (51 → 206 → 299 MB over two
/// compactions in the busy run of Docs/Benchmarks.md, where the live document needs a fraction of
/// that). `malloc_trim(0)` returns the free pages, inside the heap too. Looked up with `dlsym`
/// (glibc only; elsewhere, and where the symbol is missing, nothing is done: macOS's allocator
/// returns large frees by itself). Not run on Apple platforms.
enum FreedMemory {
    #if canImport(Glibc)
    private typealias Trim = @convention(c) (Int) -> Int32
    private static let trim: Trim? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: Trim.self)
    }()
    #endif

    /// Returns the allocator's free memory to the system, where it can.
    ///
    /// - Complexity: O(h) for h bytes of heap (a pass over the arenas): call it after a large
    ///   free, not per operation.
    static func giveBack() {
        #if canImport(Glibc)
        _ = trim?(0)
        #endif
    }
}
