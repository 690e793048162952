import Foundation
import Testing
import ListCRDT
import ListSyncRandom

/// `TextChanges` (Docs/Text.md, "From a text view"): a received batch's change to a text as
/// separate ranges, so a text view keeps its caret where nothing changed before it.
@Suite("Text changes as ranges a text view applies")
struct TextChangesTests {
    static func apply(_ splices: [TextSplice], to text: String) -> String {
        splices.reduce(text) { $1.applied(to: $0) }
    }

    @Test("two separate remote edits are two ranges, in descending order; applied one by one they give the new text")
    func separateRanges() {
        let old = "buy two pints of milk", new = "Please buy two pints of oat milk"
        let splices = TextChanges.between(old: old, new: new)
        // (" oat" after "of" or "oat " before "milk": the same change.)
        #expect(splices.count == 2 && splices[1] == TextSplice(at: 0, delete: 0, insert: "Please ")
                && splices[0].delete == 0 && [16, 17].contains(splices[0].at), "\(splices)")
        #expect(Self.apply(splices, to: old) == new)
        // A caret after "two" (position 7) moves by the 7 characters typed before it only.
        #expect(TextChanges.position(7, through: splices) == 14)
        // At the very end: both insertions are before it.
        #expect(TextChanges.position(21, through: splices) == 32)
        // Text inserted right at the caret comes after it.
        #expect(TextChanges.position(0, through: splices) == 0)
        #expect(TextChanges.between(old: old, new: old).isEmpty)
    }

    @Test("a caret inside a replaced range goes to the end of what replaced it; one before a removal stays")
    func caretInsideReplacement() {
        let splices = TextChanges.between(old: "the grey cat", new: "the black cat")
        #expect(Self.apply(splices, to: "the grey cat") == "the black cat")
        let caret = TextChanges.position(6, through: splices)   // between "gr" and "ey"
        #expect(caret >= 4 && caret <= 9)
        #expect(TextChanges.position(2, through: splices) == 2)
        #expect(TextChanges.position(12, through: splices) == 13)
    }

    @Test("seeded random texts and edits: the splices always give the new text; no more ranges than the texts differ in; bounded by maxEdits")
    func seeded() {
        var rng = SplitMix64(seed: 44)
        let alphabet = Array("ab cdé👍🏽\n".unicodeScalars)
        for round in 0 ..< 400 {
            var a = String.UnicodeScalarView()
            for _ in 0 ..< Int(rng.next() % 60) { a.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
            var b = Array(a)
            for _ in 0 ..< Int(rng.next() % 6) {
                let at = b.isEmpty ? 0 : Int(rng.next() % UInt64(b.count + 1))
                if rng.next() % 2 == 0, at < b.count { b.remove(at: at) } else { b.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at) }
            }
            var bv = String.UnicodeScalarView(); bv.append(contentsOf: b)
            let old = String(a), new = String(bv)
            let splices = TextChanges.between(old: old, new: new)
            #expect(Self.apply(splices, to: old) == new, "round \(round): \(old.debugDescription) → \(new.debugDescription) by \(splices)")
            #expect(splices.count <= 6, "round \(round): \(splices)")
            #expect(zip(splices, splices.dropFirst()).allSatisfy { $0.at >= $1.at + $1.delete }, "descending, apart: \(splices)")
            // Past the bound: one range, still right.
            let one = TextChanges.between(old: old, new: new, maxEdits: 0)
            #expect(one.count <= 1 && Self.apply(one, to: old) == new)
        }
    }
}
