// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "ListSync",
    products: [
        .library(name: "ListCRDT", targets: ["ListCRDT"]),
    ],
    dependencies: [],
    targets: [
        .target(name: "ListCRDT"),
        .testTarget(name: "ListCRDTTests", dependencies: ["ListCRDT"]),
    ]
)
