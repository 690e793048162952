// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ListSync",
    products: [
        .library(name: "ListCRDT", targets: ["ListCRDT"]),
        .library(name: "ListSync", targets: ["ListSync"]),
        .executable(name: "listsync", targets: ["listsync"]),
        .executable(name: "listsync-bench", targets: ["listsync-bench"]),
    ],
    dependencies: [],
    targets: [
        .target(name: "ListCRDT"),
        .target(name: "ListSync", dependencies: ["ListCRDT"]),
        .executableTarget(name: "listsync", dependencies: ["ListSync"]),
        // Seeded randomness and editing traces, shared by the tests and the benchmark.
        .target(name: "ListSyncTestSupport", dependencies: ["ListCRDT"]),
        // The CRDT tests borrow the simulator's random-edit generator (ListSync.RandomEdit).
        .testTarget(name: "ListCRDTTests", dependencies: ["ListCRDT", "ListSync", "ListSyncTestSupport"]),
        .testTarget(name: "ListSyncTests", dependencies: ["ListSync", "ListSyncTestSupport"]),
        .executableTarget(
            name: "listsync-bench",
            dependencies: ["ListCRDT", "ListSync", "ListSyncTestSupport"],
            path: "Benchmarks/Sources/listsync-bench"
        ),
    ]
)
