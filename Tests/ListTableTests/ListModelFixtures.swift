import Foundation
import Observation
import Synchronization
import ListSyncSimulation
@testable import ListCRDT
import ListTable

/// Fixtures of the `ListModel` tests: documents of `String` values (JSON fragments), the plain
/// array model of SwiftUI's `move(fromOffsets:toOffset:)` and `remove(atOffsets:)`, an observation
/// counter and a coder that counts its decodes.
enum ListModelFixtures {
    typealias Model = ListModel<String, String>
    typealias Board = TypedDocument<String, String>

    /// The coder of the seeded tests: a `String` as its UTF-8 bytes (JSON through Foundation would
    /// take most of their time); the other tests use the default, JSON.
    static let fast: any ValueCoder = UTF8StringCoder()

    /// A typed document with sections "S0", "S1", … holding `counts[s]` items "s0r0", "s0r1", ….
    static func board(_ replica: UInt64 = 1, counts: [Int], coder: any ValueCoder = JSONValueCoder()) throws -> Board {
        var b = Board(replica: ReplicaID(replica), coder: coder)
        for (s, n) in counts.enumerated() {
            try b.insertSection("S\(s)", at: s)
            for r in 0..<n { try b.insertItem("s\(s)r\(r)", at: IndexPath(item: r, section: s)) }
        }
        return b
    }

    /// A model of a new `LiveDocument` of ``board(_:counts:)``.
    @MainActor
    static func model(_ replica: UInt64 = 1, counts: [Int], coder: any ValueCoder = JSONValueCoder()) throws -> Model {
        Model(LiveDocument(try board(replica, counts: counts, coder: coder).document), coder: coder)
    }

    /// The values the model shows, section by section.
    @MainActor
    static func rows(_ model: Model) -> [[String]] { model.sections.map { $0.items.map(\.value) } }

    /// The document of a model, decoded with its coder (what a fresh model would show).
    @MainActor
    static func decoded(_ model: Model) throws -> TypedSnapshot<String, String> {
        try TypedSnapshot(model.live.snapshot, coder: model.coder)
    }

    /// A typed view of `model`'s document, with its coder: another replica starts from it.
    @MainActor
    static func fork(_ model: Model, as replica: UInt64) -> Board {
        Board(model.live.document.fork(as: replica), coder: model.coder)
    }

    /// A random subset of `0..<n`, each offset with probability `percent`.
    static func subset(_ n: Int, _ percent: Int, _ rng: inout SplitMix64) -> IndexSet {
        var set = IndexSet()
        for i in 0..<n where rng.chance(percent) { set.insert(i) }
        return set
    }
}

// MARK: The array model

extension Array {
    /// SwiftUI's `move(fromOffsets:toOffset:)` as documented ("moves all the elements at the
    /// specified offsets to the specified destination offset, preserving ordering"), written as
    /// its implementation is: a stable partition of the part before `destination` that sends the
    /// moved elements to its end, and one of the part from `destination` on that sends them to its
    /// start. Traps, as `Array` does, on an offset or a destination out of range.
    func moved(fromOffsets source: IndexSet, toOffset destination: Int) -> [Element] {
        precondition(destination >= 0 && destination <= count, "destination out of range")
        precondition(source.allSatisfy { indices.contains($0) }, "offset out of range")
        let prefix = enumerated().prefix(destination).map { $0 }
        let suffix = enumerated().dropFirst(destination).map { $0 }
        let head = prefix.filter { !source.contains($0.offset) } + prefix.filter { source.contains($0.offset) }
        let tail = suffix.filter { source.contains($0.offset) } + suffix.filter { !source.contains($0.offset) }
        return (head + tail).map(\.element)
    }

    /// SwiftUI's `remove(atOffsets:)`: every element at `offsets` removed, the others in order.
    func removed(atOffsets offsets: IndexSet) -> [Element] {
        precondition(offsets.allSatisfy { indices.contains($0) }, "offset out of range")
        return enumerated().filter { !offsets.contains($0.offset) }.map(\.element)
    }
}

// MARK: Observation

/// Counts every change that `withObservationTracking` reports for what `read` reads, however many
/// there are: it tracks again from inside each report, so a second mutation in the same change
/// would be counted too.
@MainActor
final class ObservationCounter {
    private(set) var count = 0
    private let read: @MainActor () -> Void

    init(_ read: @escaping @MainActor () -> Void) {
        self.read = read
        track()
    }

    private func track() {
        withObservationTracking { read() } onChange: { [weak self] in
            MainActor.assumeIsolated {
                guard let self else { return }
                self.count += 1
                self.track()
            }
        }
    }
}

// MARK: Coders

/// A `String` as its UTF-8 bytes; any other type, or bytes that are not UTF-8, is an error.
struct UTF8StringCoder: ValueCoder {
    struct NotAString: Error {}

    func encode<T: Encodable>(_ value: T) throws(ValueCodingError) -> Data {
        guard let s = value as? String else { throw ValueCodingError(.encoding, T.self, underlying: NotAString()) }
        return Data(s.utf8)
    }

    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(ValueCodingError) -> T {
        guard T.self == String.self, let s = String(data: data, encoding: .utf8) else {
            throw ValueCodingError(.decoding, T.self, underlying: NotAString())
        }
        return s as! T
    }
}

// MARK: A counting coder

/// JSON, counting its decodes: a refresh must decode only new or changed values.
final class CountingCoder: ValueCoder {
    private let json = JSONValueCoder()
    private let decodes = Mutex(0)

    /// The number of decodes so far.
    var decodeCount: Int { decodes.withLock { $0 } }

    func encode<T: Encodable>(_ value: T) throws(ValueCodingError) -> Data { try json.encode(value) }

    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(ValueCodingError) -> T {
        decodes.withLock { $0 += 1 }
        return try json.decode(type, from: data)
    }
}
