/// A binary min-heap in an array.
struct MinHeap<Element: Comparable & Sendable>: Sendable {
    private var items: [Element] = []

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }
    /// The smallest element, or nil.
    var min: Element? { items.first }

    /// - Complexity: O(log n).
    mutating func push(_ e: Element) {
        items.append(e)
        var i = items.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            if !(items[i] < items[parent]) { break }
            items.swapAt(i, parent)
            i = parent
        }
    }

    /// Removes the smallest element.
    ///
    /// - Complexity: O(log n).
    mutating func popMin() {
        guard !items.isEmpty else { return }
        let last = items.removeLast()
        guard !items.isEmpty else { return }
        items[0] = last
        var i = 0
        let n = items.count
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < n, items[l] < items[m] { m = l }
            if r < n, items[r] < items[m] { m = r }
            if m == i { break }
            items.swapAt(i, m)
            i = m
        }
    }
}
