// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ListSync",
    products: [
        .library(name: "ListCRDT", targets: ["ListCRDT"]),
        .executable(name: "listsync-bench", targets: ["listsync-bench"]),
    ],
    dependencies: [],
    targets: [
        .target(name: "ListCRDT"),
        // Seeded randomness and editing traces, shared by the tests and the benchmark.
        .target(name: "ListSyncTestSupport", dependencies: ["ListCRDT"]),
        .testTarget(name: "ListCRDTTests", dependencies: ["ListCRDT", "ListSyncTestSupport"]),
        .executableTarget(
            name: "listsync-bench",
            dependencies: ["ListCRDT", "ListSyncTestSupport"],
            path: "Benchmarks/Sources/listsync-bench"
        ),
    ]
)
