import Foundation
import ListSyncFaults
import ListSyncTCP
import Synchronization

// listsync-faultproxy: a TCP proxy with seeded faults (ListSyncFaults.FaultProxy) between daemons,
// or between clients and a daemon; and `scenario`, the three-daemon partition run of
// Benchmarks/faults.sh (Scenario.swift).

let usage = """
    USAGE: listsync-faultproxy --listen HOST:PORT --to HOST:PORT [--seed S] [fault options]
           listsync-faultproxy scenario [--seed S] [--binary PATH] [--json]   (see `scenario --help`)

    Passes bytes both ways between each client of HOST:PORT (--listen) and the target (--to), with
    faults drawn from the seed (random when not given; it is printed, so a run can be replayed).
    Bytes are never altered or reordered: only delayed, stalled, held, or the connection closed.

    Faults (all off by default; times in milliseconds, ranges MIN-MAX or one value):
      --delay MIN-MAX            delay of each segment of a direction's bytes
      --segment MIN-MAX          segment sizes in bytes (default 1-16384)
      --stall-probability P      a segment starts a stall: it and what follows wait
      --stall MIN-MAX            stall length (default 100-1000)
      --drop-probability P       an accepted connection is closed at once
      --cut-probability P        a connection is cut after a random number of bytes
      --cut-bytes MIN-MAX        where cuts fall, in bytes passed both ways (default 1-10000)
      --reset-probability P      a drop or cut closes with RST rather than FIN (default 0.5)
      --partition-mode reset|blackhole
                                 reset: connections closed, new ones refused (default);
                                 blackhole: nothing passes, everything held until the heal
    Control:
      --partition-every S --partition-for S
                                 a partition every S seconds, lasting S seconds (faults go on)
      --heal-after S             heal for good after S seconds: no partition, no fault any more
      --stats-every S            print the counts every S seconds
      --log                      one line per connection and fault on standard error
      SIGUSR1 starts a partition, SIGUSR2 heals for good, SIGINT/SIGTERM print the counts and exit.
    """

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("listsync-faultproxy: \(message)\n".utf8))
    exit(2)
}

/// `value`, or exit with `message` (a usage error).
func need<T>(_ value: T?, _ message: String) -> T {
    guard let value else { fail(message) }
    return value
}

/// Writes a line to standard output at once (unbuffered: a script reads it as it comes).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// `HOST:PORT`.
func parseAddress(_ text: String) -> (String, UInt16)? {
    guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
    return (String(text[..<colon]), port)
}

/// `MIN-MAX` or one number.
func parseRange(_ text: String) -> ClosedRange<Int>? {
    let parts = text.split(separator: "-", maxSplits: 1).map { Int($0) }
    if parts.count == 1, let v = parts[0], v >= 0 { return v...v }
    if parts.count == 2, let a = parts[0], let b = parts[1], a >= 0, a <= b { return a...b }
    return nil
}

func milliseconds(_ r: ClosedRange<Int>) -> ClosedRange<Duration> { .milliseconds(r.lowerBound) ... .milliseconds(r.upperBound) }

func printStatistics(_ s: FaultStatistics, seed: UInt64) {
    let fields = s.fields.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    say("seed=\(seed) faults=\(s.faults) \(fields)")
    }

func runProxy(_ arguments: [String]) async throws {
    var args = arguments[...]
    var listen: (String, UInt16)?, to: (String, UInt16)?
    var seed: UInt64 = UInt64.random(in: 1 ... UInt64(Int64.max))
    var plan = FaultPlan(seed: 0)
    var partitionEvery: Double?, partitionFor = 1.0, healAfter: Double?, statsEvery: Double?
    var verbose = false
    func value(_ name: String) -> String {
        guard let v = args.popFirst() else { fail("\(name) needs a value") }
        return v
    }
    func probability(_ name: String) -> Double {
        guard let p = Double(value(name)), (0...1).contains(p) else { fail("\(name): a probability from 0 to 1") }
        return p
    }
    func range(_ name: String) -> ClosedRange<Int> {
        guard let r = parseRange(value(name)) else { fail("\(name): MIN-MAX or one number") }
        return r
    }
    func seconds(_ name: String) -> Double {
        guard let s = Double(value(name)), s > 0 else { fail("\(name): seconds > 0") }
        return s
    }
    while let a = args.popFirst() {
        switch a {
        case "--listen": listen = need(parseAddress(value(a)), "--listen HOST:PORT")
        case "--to": to = need(parseAddress(value(a)), "--to HOST:PORT")
        case "--seed": seed = need(UInt64(value(a)), "--seed: a number")
        case "--delay": plan.delay = milliseconds(range(a))
        case "--segment":
            let r = range(a)
            guard r.lowerBound >= 1 else { fail("--segment: at least 1 byte") }
            plan.segmentBytes = r
        case "--stall-probability": plan.stallProbability = probability(a)
        case "--stall": plan.stall = milliseconds(range(a))
        case "--drop-probability": plan.dropProbability = probability(a)
        case "--cut-probability": plan.cutProbability = probability(a)
        case "--cut-bytes":
            let r = range(a)
            guard r.lowerBound >= 1 else { fail("--cut-bytes: at least 1") }
            plan.cutBytes = r
        case "--reset-probability": plan.resetProbability = probability(a)
        case "--partition-mode": plan.partitionMode = need(PartitionMode(rawValue: value(a)), "--partition-mode reset|blackhole")
        case "--partition-every": partitionEvery = seconds(a)
        case "--partition-for": partitionFor = seconds(a)
        case "--heal-after": healAfter = seconds(a)
        case "--stats-every": statsEvery = seconds(a)
        case "--log": verbose = true
        case "-h", "--help":
            say(usage)
            exit(0)
        default: fail("unknown option \(a)\n\(usage)")
        }
    }
    guard let listen, let to else { fail("--listen and --to are required\n\(usage)") }
    guard let target = try SocketAddress.resolve(host: to.0, port: to.1).first else { fail("cannot resolve \(to.0)") }
    plan.seed = seed
    let chosenSeed = seed
    var log: (@Sendable (String) -> Void)?
    if verbose { log = { line in FileHandle.standardError.write(Data((line + "\n").utf8)) } }
    let proxy = try await FaultProxy.start(host: listen.0, port: listen.1, to: target, plan: plan, log: log)
    say("listsync-faultproxy: listening on \(proxy.address), to \(target), seed \(seed)")
    var replay = arguments
    if let i = replay.firstIndex(of: "--seed") { replay.removeSubrange(i ... min(i + 1, replay.count - 1)) }
    say("  replay: listsync-faultproxy \((replay + ["--seed", "\(seed)"]).joined(separator: " "))")

    // Signals: USR1 partition, USR2 heal, INT/TERM counts and exit.
    var sources: [DispatchSourceSignal] = []
    for sig in [SIGUSR1, SIGUSR2, SIGINT, SIGTERM] {
        signal(sig, SIG_IGN)
        let s = DispatchSource.makeSignalSource(signal: sig, queue: .global())
        s.setEventHandler {
            Task {
                switch sig {
                case SIGUSR1:
                    await proxy.partition()
                    say("partition (SIGUSR1)")
                case SIGUSR2:
                    await proxy.heal()
                    say("healed (SIGUSR2)")
                default:
                    printStatistics(await proxy.statistics(), seed: chosenSeed)
                    await proxy.close()
                    exit(0)
                }
            }
        }
        s.resume()
        sources.append(s)
    }
    let start = ContinuousClock.now
    var healed = false
    var nextPartition = partitionEvery.map { start + .seconds($0) }
    var nextStats = statsEvery.map { start + .seconds($0) }
    while true {
        try await Task.sleep(for: .milliseconds(50))
        let now = ContinuousClock.now
        if !healed, let h = healAfter, now >= start + .seconds(h) {
            healed = true
            nextPartition = nil
            await proxy.heal()
            say("healed (--heal-after)")
        }
        if let p = nextPartition, now >= p {
            await proxy.partition()
            say("partition")
                        try await Task.sleep(for: .seconds(partitionFor))
            if !healed {
                await proxy.endPartition()
                say("partition ended")
            }
            nextPartition = partitionEvery.map { ContinuousClock.now + .seconds($0) }
        }
        if let s = nextStats, now >= s {
            printStatistics(await proxy.statistics(), seed: chosenSeed)
            nextStats = statsEvery.map { now + .seconds($0) }
        }
            }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let exitCode = Mutex<Int32>(0)
let done = DispatchSemaphore(value: 0)
Task.detached {
    do {
        if arguments.first == "scenario" {
            let ok = try await runScenarioCommand(Array(arguments.dropFirst()))
            exitCode.withLock { $0 = ok ? 0 : 1 }
        } else {
            try await runProxy(arguments)
        }
    } catch {
        FileHandle.standardError.write(Data("listsync-faultproxy: \(error)\n".utf8))
        exitCode.withLock { $0 = 1 }
    }
    done.signal()
}
done.wait()
exit(exitCode.withLock { $0 })
