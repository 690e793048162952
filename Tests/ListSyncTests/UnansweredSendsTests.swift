import ListSync
import Testing

/// ``UnansweredSends``: a refusal is final only once every daemon sent the refused operations
/// without answering has refused them (Docs/Semantics.md §7, "Roaming").
@Suite("Roaming: unanswered sends")
struct UnansweredSendsTests {
    @Test("refused by the only daemon it sent to: make them again")
    func onlyDaemon() {
        var sends = UnansweredSends<String>()
        sends.sent(to: "x")
        #expect(sends.refused(by: "x") == .remake)
        #expect(sends.daemons.isEmpty)
    }

    @Test("sent to W without an answer, refused by X: go back to W first; refused there too: make them again")
    func goBackFirst() {
        var sends = UnansweredSends<String>()
        sends.sent(to: "w")
        sends.sent(to: "x")
        #expect(sends.refused(by: "x") == .settle(at: "w"))
        #expect(sends.daemons == ["w"])
        #expect(sends.refused(by: "w") == .remake)
    }

    @Test("a refusal by a daemon never sent to (it saw them relayed) still waits for those that were")
    func refusedByAnother() {
        var sends = UnansweredSends([1, 3])
        #expect(sends.refused(by: 2) == .settle(at: 1))
        #expect(sends.refused(by: 1) == .settle(at: 3))
        #expect(sends.refused(by: 3) == .remake)
    }

    @Test("everything acknowledged: nothing waits, a later refusal is final where it was sent")
    func acknowledged() {
        var sends = UnansweredSends<Int>()
        sends.sent(to: 1)
        sends.sent(to: 2)
        #expect(!sends.adds(1) && sends.adds(3))
        sends.allAcknowledged()
        #expect(sends.daemons.isEmpty && sends.adds(1))
        sends.sent(to: 2)
        #expect(sends.refused(by: 2) == .remake)
    }

    @Test("a daemon that cannot be asked (no longer configured, lost for good) is given up on the way: the next that can is asked, or they are made again")
    func unaskableGivenUp() {
        var sends = UnansweredSends([1, 2, 3])
        #expect(sends.refused(by: 3, askable: { $0 != 1 }) == .settle(at: 2))
        #expect(sends.daemons == [2], "the daemon that cannot be asked is given up with what it may hold")
        var lost = UnansweredSends([1, 2])
        #expect(lost.refused(by: 2, askable: { $0 != 1 }) == .remake)
        #expect(lost.daemons.isEmpty)
    }
}
