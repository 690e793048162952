// swift-tools-version:6.0
import PackageDescription

// `Mutex` (Synchronization), used by LiveDocument and InMemoryTransport, needs these releases;
// `Tests/ListTableTests/PlatformTests.swift` fails if a source uses `Mutex` or `Atomic` without them declared here
// or in an `@available` on the enclosing declaration.
let platforms: [SupportedPlatform] = [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)]

let package = Package(
    name: "ListSync",
    platforms: platforms,
    products: [
        .library(name: "ListCRDT", targets: ["ListCRDT"]),
        .library(name: "ListTable", targets: ["ListTable"]),
        .library(name: "ListSyncTransport", targets: ["ListSyncTransport"]),
        .library(name: "ListSync", targets: ["ListSync"]),
        .library(name: "ListSyncSimulation", targets: ["ListSyncSimulation"]),
        .library(name: "ListSyncTCP", targets: ["ListSyncTCP"]),
        .library(name: "ListSyncHTTP", targets: ["ListSyncHTTP"]),
        .library(name: "ListSyncNATS", targets: ["ListSyncNATS"]),
        .library(name: "ListSyncCrypto", targets: ["ListSyncCrypto"]),
        .library(name: "ListStore", targets: ["ListStore"]),
        .library(name: "ListSyncServer", targets: ["ListSyncServer"]),
        .library(name: "ListSyncClient", targets: ["ListSyncClient"]),
        .library(name: "ListSyncWeb", targets: ["ListSyncWeb"]),
        .executable(name: "listsync", targets: ["listsync"]),
        .executable(name: "listsync-bench", targets: ["listsync-bench"]),
        .executable(name: "listsync-load", targets: ["listsync-load"]),
        .executable(name: "listsync-faultproxy", targets: ["listsync-faultproxy"]),
    ],
    dependencies: [],
    targets: [
        // A document's identity (`DocumentID`), depending on nothing: the engine re-exports it, and
        // the transport's handshake names documents in a device's claims without the engine.
        .target(name: "ListSyncIdentity"),
        // The engine: pure (no I/O, no clock, no randomness it was not handed).
        .target(name: "ListCRDT", dependencies: ["ListSyncIdentity"], exclude: ["Compaction/README.md", "Document/FastPaths/README.md", "Sequence/README.md"]),
        // The UI layer on the engine's public API: change sets, drag sessions, LiveDocument.
        .target(name: "ListTable", dependencies: ["ListCRDT"]),
        // The bottom of the network stack, depending on nothing: `Transport`, `TransportError` (its
        // reasons typed: `CloseReason`) and the in-memory transport.
        .target(name: "ListSyncTransport"),
        // The sync protocol (Docs/Protocol.md): messages and every role as a state machine with no
        // I/O (client, server connection, document core, peer), on the engine; it re-exports the
        // transport.
        .target(name: "ListSync", dependencies: ["ListCRDT", "ListSyncTransport"]),
        // SplitMix64, the one seeded generator of the simulator, the tests, fault plans and benchmarks.
        .target(name: "ListSyncRandom"),
        // Seeded, replayable simulation: the in-memory network, workloads, the semantics oracle.
        .target(name: "ListSyncSimulation", dependencies: ["ListCRDT", "ListTable", "ListSync", "ListStore", "ListSyncRandom"]),
        // SHA-256, HMAC, HKDF, ChaCha20-Poly1305: pure Swift, no I/O.
        .target(name: "ListSyncCrypto"),
        // epoll and eventfd, which Swift's Glibc module does not export (headers only).
        .target(name: "CListSyncLinux"),
        // Sockets on an event loop, frames, the key handshake and sealed frames.
        // Below the protocol and the engine: `DocumentID` (the documents a device credential names,
        // Credential.swift) comes from ListSyncIdentity.
        .target(name: "ListSyncTCP", dependencies: ["ListSyncTransport", "ListSyncIdentity", "ListSyncCrypto", "CListSyncLinux"]),
        // A small HTTP/1.1 server on the transport's event loop and syscall funnel (the daemon's
        // admin port: /healthz, /readyz, Prometheus /metrics, bearer tokens).
        .target(name: "ListSyncHTTP", dependencies: ["ListSyncTransport", "ListSyncTCP", "ListSyncCrypto"]),
        // A NATS client (Docs/Cluster.md): the client protocol's parser and connection as state
        // machines, the connection on the transport's event loop and syscall funnel, JetStream.
        .target(name: "ListSyncNATS", dependencies: ["ListSyncTransport", "ListSyncTCP"]),
        // A TCP proxy that injects seeded faults (delays, stalls, drops, cuts, partitions): the pure
        // fault machine and its socket loop on the transport's event loop (Docs/Reliability.md).
        .target(name: "ListSyncFaults", dependencies: ["ListSyncTransport", "ListSyncTCP", "ListSyncRandom"]),
        // The durable store: op log, snapshots, recovery; every file call through one funnel.
        .target(name: "ListStore", dependencies: ["ListCRDT"]),
        // A child process for the kill -9 tests and Benchmarks/store-kill9.sh: appends, prints each ack.
        .executableTarget(name: "listsync-store-probe", dependencies: ["ListStore", "ListCRDT", "ListSyncRandom"]),
        // The files the daemon, its commands and the web view share, below the daemon: the key file,
        // device credential files and the devices file (each checked for its mode: SecretFile), and
        // PrintableText, how the commands print what others named.
        .target(name: "ListSyncFiles", dependencies: ["ListCRDT", "ListSync", "ListStore", "ListSyncCrypto", "ListSyncTCP"]),
        // The peer daemon: documents registry, connections, peers, metrics; and its client.
        .target(name: "ListSyncServer", dependencies: ["ListCRDT", "ListTable", "ListSync", "ListSyncTCP", "ListSyncHTTP", "ListStore", "ListSyncCrypto", "ListSyncNATS", "ListSyncFiles"]),
        // What an app links to sync, without the daemon: the offline-first device client
        // (SyncClient: a local store per document, edits durable on the device, reconnection;
        // Docs/Client.md) and DaemonClient (one connection, online only); both drive the
        // protocol's client session over TCP.
        .target(name: "ListSyncClient", dependencies: ["ListCRDT", "ListTable", "ListSync", "ListSyncTCP", "ListStore"]),
        // The web view (`listsync serve --web`, Docs/Web.md): the lists in a browser, live, with
        // drag and drop; one-time login links, session cookies, CSRF checks. Each browser session
        // is a client of the daemon over its own port, proving the key or the device's credential.
        .target(name: "ListSyncWeb", dependencies: ["ListCRDT", "ListTable", "ListSync", "ListSyncTCP", "ListSyncHTTP", "ListSyncCrypto", "ListSyncClient", "ListSyncFiles"]),
        // The command-line tool: serve, the client commands, simulate. Wiring only.
        .executableTarget(name: "listsync", dependencies: ["ListSyncWeb", "ListSyncSimulation", "ListSyncServer", "ListSyncFiles", "ListSyncNATS", "ListSyncClient", "ListSync", "ListSyncTCP", "ListStore", "ListTable", "ListCRDT"]),
        // Editing traces, shared by the tests and the benchmark.
        .target(name: "ListSyncTestSupport", dependencies: ["ListCRDT", "ListSyncSimulation"]),
        // Test traits (Swift Testing): `.ownThread` keeps long tests off the cooperative pool.
        .target(name: "ListSyncTestTraits"),
        .testTarget(
            name: "ListCRDTTests",
            dependencies: ["ListCRDT", "ListTable", "ListSync", "ListSyncSimulation", "ListSyncTestSupport", "ListSyncTestTraits", "ListSyncRandom"]
        ),
        .testTarget(
            name: "ListTableTests",
            dependencies: ["ListCRDT", "ListTable", "ListSync", "ListSyncSimulation", "ListSyncTestSupport", "ListSyncTestTraits"]
        ),
        .testTarget(
            name: "ListSyncTests",
            dependencies: ["ListCRDT", "ListTable", "ListSync", "ListSyncSimulation", "ListSyncRandom", "ListSyncTestSupport", "ListSyncTestTraits"]
        ),
        .testTarget(
            name: "ListSyncTCPTests",
            dependencies: ["ListCRDT", "ListSync", "ListSyncTCP", "ListSyncHTTP", "ListSyncCrypto", "ListSyncSimulation", "ListSyncRandom", "ListSyncTestSupport", "ListSyncTestTraits"]
        ),
        .testTarget(name: "ListSyncCryptoTests", dependencies: ["ListSyncCrypto", "ListSyncRandom"]),
        .testTarget(name: "ListSyncWebTests", dependencies: ["ListSyncWeb", "ListCRDT", "ListTable", "ListSyncTCP", "ListSyncHTTP", "ListSyncCrypto", "ListSyncRandom"]),
        .testTarget(name: "ListSyncNATSTests", dependencies: ["ListSyncNATS", "ListSyncTCP", "ListSync", "ListSyncTestSupport", "ListSyncTestTraits"]),
        .testTarget(name: "ListSyncFaultsTests", dependencies: ["ListSyncFaults", "ListSyncTCP", "ListSyncTestSupport", "ListSyncTestTraits"]),
        .testTarget(
            name: "ListStoreTests",
            dependencies: ["ListStore", "ListCRDT", "ListSyncSimulation", "ListSyncTestSupport", "ListSyncTestTraits", "listsync-store-probe"]
        ),
        // Starts the built `listsync` binary as a process (a dependency, so it is built first).
        .testTarget(name: "ListSyncServerTests", dependencies: ["listsync", "listsync-load", "ListSyncServer", "ListSyncClient", "ListSync", "ListTable", "ListSyncTCP", "ListSyncHTTP", "ListStore", "ListCRDT", "ListSyncTestSupport", "ListSyncTestTraits",
                                                         "ListSyncFaults", "listsync-faultproxy", "ListSyncNATS", "ListSyncCrypto", "ListSyncFiles"]),
        .executableTarget(
            name: "listsync-bench",
            dependencies: ["ListCRDT", "ListSync", "ListSyncSimulation", "ListSyncTCP", "ListSyncTestSupport", "ListSyncCrypto", "ListStore",
                           "ListSyncClient", "ListTable", "ListSyncRandom"],
            path: "Benchmarks/Sources/listsync-bench"
        ),
        // Many clients editing shared lists through a `listsync serve` process (Docs/Reliability.md).
        .executableTarget(
            name: "listsync-load",
            dependencies: ["ListCRDT", "ListStore", "ListSyncServer", "ListSyncFiles", "ListSyncClient", "ListSync", "ListTable", "ListSyncRandom"],
            path: "Benchmarks/Sources/listsync-load"
        ),
        // The fault proxy as a command, and the three-daemon partition scenario of Benchmarks/faults.sh.
        .executableTarget(
            name: "listsync-faultproxy",
            dependencies: ["ListSyncFaults", "ListSyncTCP", "ListSyncServer", "ListSyncFiles", "ListSyncClient", "ListSync", "ListStore", "ListCRDT", "ListTable",
                           "ListSyncTestSupport"],
            path: "Benchmarks/Sources/listsync-faultproxy"
        ),
    ]
)
