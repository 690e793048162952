import Foundation
import ListSyncTestSupport
import ListSyncTestTraits
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `PipeDrain`, which reads the real binaries' output in the process tests: a readability
/// handler's dispatch source, torn down while its descriptor closed, crashed a whole CI run
/// with a segmentation fault in libdispatch's event loop.
@Suite("Draining a child's output with blocking reads")
struct PipeDrainTests {
    @Test("a child's output arrives whole and in order, stdout and stderr apart; the drain ends when the child exits", .ownThread)
    func wholeOutput() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "i=0; while [ $i -lt 2000 ]; do echo line $i; i=$((i+1)); done; echo oops >&2"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let (stdout, stderr) = (OutputBuffer(), OutputBuffer())
        PipeDrain.start(out) { stdout.append($0) }
        PipeDrain.start(err) { stderr.append($0) }
        try process.run()
        process.waitUntilExit()
        let expected = (0..<2000).map { "line \($0)\n" }.joined()
        // The drain threads finish reading after the exit; a liveness guard, not a verdict.
        let deadline = Date().addingTimeInterval(60)
        while (stdout.text != expected || stderr.text != "oops\n") && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(stdout.text == expected)
        #expect(stderr.text == "oops\n")
    }

    @Test("200 children started from four threads at once, half of them killed once they printed, their output drained: nothing crashes, every one ends and every output is whole", .ownThread)
    func manyTeardowns() throws {
        let ended = OutputBuffer()
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for k in 0..<50 {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: "/bin/sh")
                let killed = k % 2 == 0
                process.arguments = ["-c", killed ? "echo start; exec sleep 60" : "echo start; echo \(worker).\(k)"]
                let out = Pipe()
                process.standardOutput = out
                process.standardError = out
                let seen = OutputBuffer()
                PipeDrain.start(out) { seen.append($0) }
                guard (try? process.run()) != nil else { continue }
                if killed {
                    // Killed once it printed (it runs `sleep` then); a liveness guard, not a verdict.
                    let deadline = Date().addingTimeInterval(60)
                    while !seen.text.contains("start") && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
                    kill(process.processIdentifier, SIGKILL)
                }
                process.waitUntilExit()
                let expected = killed ? "start\n" : "start\n\(worker).\(k)\n"
                let deadline = Date().addingTimeInterval(60)
                while seen.text != expected && Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
                if seen.text == expected { ended.append(Data("\(worker).\(k)\n".utf8)) }
            }
        }
        #expect(ended.text.split(separator: "\n").count == 200)
    }
}
