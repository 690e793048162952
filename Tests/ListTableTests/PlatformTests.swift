import Foundation
import Testing

/// The package's sources against the releases they need: every use of `Mutex` or `Atomic`
/// (Synchronization) must be covered by the `platforms:` of Package.swift or by an `@available` on
/// an enclosing declaration; `Glibc`, `Darwin` and `Musl` are imported only under `#if canImport`.
@Suite("Platforms: Synchronization's releases, guarded system imports")
struct PlatformTests {
    /// The package root: three levels above this file (Tests/ListTableTests/PlatformTests.swift).
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The directories holding the package's target sources.
    static let sourceDirectories = ["Sources", "Benchmarks/Sources"]

    static func packageSources() throws -> [PlatformCheck.SourceFile] {
        try sourceDirectories.flatMap { try PlatformCheck.swiftFiles(under: packageRoot, in: $0) }
    }

    @Test("every Mutex / Atomic use is covered by Package.swift's platforms or an @available")
    func synchronizationReleasesAreDeclared() throws {
        let manifest = try String(contentsOf: Self.packageRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        let sources = try Self.packageSources()
        #expect(sources.contains { $0.path.hasPrefix("Sources/ListCRDT/") }, "no sources found under \(Self.packageRoot.path)")
        let problems = PlatformCheck.synchronizationProblems(manifest: manifest, sources: sources)
        #expect(problems == [], "\n\(problems.joined(separator: "\n"))")
    }

    @Test("the platforms of Package.swift reach Observation's releases (ListModel is @Observable)")
    func observationReleasesAreDeclared() throws {
        let manifest = try String(contentsOf: Self.packageRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        let sources = try Self.packageSources()
        #expect(sources.contains { $0.path == "Sources/ListTable/SwiftUI/ListModel.swift" })
        let problems = PlatformCheck.observationProblems(manifest: manifest, sources: sources)
        #expect(problems == [], "\n\(problems.joined(separator: "\n"))")
        // The checker can fail: a manifest below macOS 14 and a file that imports Observation.
        let observing = PlatformCheck.SourceFile(path: "Sources/Fixture/Model.swift", text: "import Foundation\nimport Observation\n")
        let older = "let package = Package(name: \"F\", platforms: [.macOS(.v13), .iOS(.v17), .tvOS(.v17), .watchOS(.v10), .visionOS(.v1)])"
        #expect(PlatformCheck.observationProblems(manifest: older, sources: [observing])
                == ["Sources/Fixture/Model.swift: imports Observation, which needs macOS 14.0"])
        #expect(PlatformCheck.observationProblems(manifest: Self.noPlatforms, sources: [observing]).count == 1)
        #expect(PlatformCheck.observationProblems(manifest: older, sources: [.init(path: "A.swift", text: "// import Observation")]) == [])
    }

    @Test("Glibc, Darwin and Musl are imported only under #if canImport of the same module")
    func systemImportsAreGuarded() throws {
        let problems = PlatformCheck.unguardedSystemImports(in: try Self.packageSources())
        #expect(problems == [], "\n\(problems.joined(separator: "\n"))")
    }

    // MARK: The checker on fixtures: it can fail

    static let noPlatforms = """
        // swift-tools-version:6.0
        import PackageDescription
        // platforms: [.macOS(.v15)] in a comment does not count
        let package = Package(name: "Fixture", targets: [.target(name: "Fixture")])
        """
    static let allPlatforms = """
        // swift-tools-version:6.0
        import PackageDescription
        let package = Package(
            name: "Fixture",
            platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
            targets: [.target(name: "Fixture")]
        )
        """
    static let stringPlatforms = """
        let package = Package(name: "Fixture",
                              platforms: [.macOS("15.0"), .iOS("18.0"), .tvOS("18.0"), .watchOS("11.0"), .visionOS("2.0")])
        """
    static let olderPlatforms = """
        let package = Package(name: "Fixture", platforms: [.macOS(.v14), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)])
        """
    static let noVisionOS = """
        let package = Package(name: "Fixture", platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11)])
        """
    static let floor = "macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *"

    static let bareMutex = """
        import Synchronization

        /// A counter behind a `Mutex`.
        final class Counter: Sendable {
            let value = Mutex(0)
            func fresh() -> Mutex<Int> { Mutex(0) }
        }
        """
    static let annotatedMutex = """
        import Synchronization

        /// A counter behind a `Mutex`.
        @available(\(floor))
        public final class Counter: Sendable {
            let value = Mutex(0)
        }
        """
    static let annotatedExtension = """
        import Synchronization

        struct Box {}

        @available(\(floor))
        extension Box {
            func make() -> Mutex<Int> { Mutex(0) }
        }
        """
    static let annotatedMember = """
        import Synchronization

        struct Box {
            @available(\(floor))
            func make() -> Int {
                let m = Mutex(1)
                return m.withLock { $0 }
            }
        }
        """
    static let annotationOnAnotherMember = """
        import Synchronization

        struct Box {
            @available(\(floor))
            func other() -> Int { 1 }
            let x = 2
            func make() -> Int {
                let m = Mutex(1)
                return m.withLock { $0 }
            }
        }
        """
    static let macOSOnly = """
        import Synchronization

        @available(macOS 15.0, *)
        struct Box { let m = Mutex(0) }
        """
    static let longForm = """
        import Synchronization

        @available(macOS, introduced: 15.0)
        @available(iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
        struct Box { let m = Mutex(0) }
        """
    static let nestedInAnnotated = """
        import Synchronization

        @available(\(floor))
        enum Outer {
            struct Inner {
                let m = Mutex(0)
            }
        }
        """
    static let atomic = """
        import Synchronization

        struct Ticket { let next = Atomic<Int>(0) }
        """
    static let onlyMentioned = """
        /// Not a `Mutex`: comments and strings.
        struct Plain {
            /* a nested /* Atomic */ comment: Mutex */
            let a = "Mutex<Int>"
            let b = #"Atomic "Mutex""#
            let c = \"""
                Mutex \\(1 + 1) Atomic
                \"""
            let d = "\\("Mutex")"
            // Mutex
        }
        """
    static let importOnly = """
        import Synchronization

        struct Plain { let x = 1 }
        """

    typealias File = PlatformCheck.SourceFile

    func problems(_ manifest: String, _ source: String, path: String = "Sources/Fixture/Counter.swift") -> [String] {
        PlatformCheck.synchronizationProblems(manifest: manifest, sources: [File(path: path, text: source)])
    }

    @Test("the manifest parser reads .v15 and \"15.0\" forms and ignores comments")
    func manifestParser() {
        let floor = PlatformCheck.synchronizationFloor
        #expect(PlatformCheck.declaredPlatforms(inManifest: Self.noPlatforms).isEmpty)
        #expect(PlatformCheck.declaredPlatforms(inManifest: Self.allPlatforms) == floor)
        #expect(PlatformCheck.declaredPlatforms(inManifest: Self.stringPlatforms) == floor)
        #expect(PlatformCheck.declaredPlatforms(inManifest: "platforms: [.macOS(.v10_15), .iOS(.v13)]")
                == ["macOS": [10, 15], "iOS": [13]])
    }

    @Test("a Mutex without platforms or @available is reported, naming the file and the type")
    func uncoveredMutexIsReported() throws {
        let found = problems(Self.noPlatforms, Self.bareMutex)
        #expect(found.count == 1)
        let report = try #require(found.first)
        #expect(report.contains("Sources/Fixture/Counter.swift") && report.contains("class Counter")
                && report.contains("Mutex") && report.contains("lines 5, 6"), "\(report)")
        for manifest in [Self.olderPlatforms, Self.noVisionOS] {
            #expect(problems(manifest, Self.bareMutex).count == 1, "\(manifest)")
        }
        #expect(problems(Self.olderPlatforms, Self.bareMutex).first?.contains("macOS 15") == true)
        #expect(problems(Self.noVisionOS, Self.bareMutex).first?.contains("visionOS 2") == true)
    }

    @Test("the platforms of Package.swift cover every use")
    func platformsCover() {
        for manifest in [Self.allPlatforms, Self.stringPlatforms] {
            #expect(problems(manifest, Self.bareMutex) == [])
            #expect(problems(manifest, Self.atomic) == [])
            #expect(problems(manifest, Self.importOnly) == [])
            #expect(problems(manifest, Self.annotationOnAnotherMember) == [])
        }
    }

    @Test("an @available on an enclosing type, extension or member covers a use")
    func availableCovers() {
        for source in [Self.annotatedMutex, Self.annotatedExtension, Self.annotatedMember, Self.longForm,
                       Self.nestedInAnnotated] {
            #expect(problems(Self.noPlatforms, source) == [], "\(source)")
        }
        // An @available on a sibling member does not cover; one naming macOS only does not cover iOS.
        #expect(problems(Self.noPlatforms, Self.annotationOnAnotherMember).first?.contains("struct Box") == true)
        let macOSOnly = problems(Self.noPlatforms, Self.macOSOnly)
        #expect(macOSOnly.count == 1 && macOSOnly.first?.contains("iOS 18") == true
                && macOSOnly.first?.contains("needs macOS") == false, "\(macOSOnly)")
        // Platforms from the manifest and the @available combine.
        #expect(problems(Self.olderPlatforms, Self.macOSOnly) == [])
    }

    @Test("Atomic and a bare import Synchronization count; comments and strings do not")
    func whatCounts() {
        #expect(problems(Self.noPlatforms, Self.atomic).first?.contains("struct Ticket") == true)
        #expect(problems(Self.noPlatforms, Self.importOnly).first?.contains("import Synchronization") == true)
        #expect(problems(Self.noPlatforms, Self.onlyMentioned) == [])
        // The lexer keeps line numbers and blanks only comments and string contents.
        let code = String(decoding: PlatformCheck.codeOnly(Self.onlyMentioned), as: UTF8.self)
        #expect(code.split(separator: "\n", omittingEmptySubsequences: false).count
                == Self.onlyMentioned.split(separator: "\n", omittingEmptySubsequences: false).count)
        #expect(!code.contains("Mutex") && !code.contains("Atomic") && code.contains("struct Plain"))
        #expect(code.contains("1 + 1"), "interpolated code stays code")
    }

    @Test("unguarded Glibc / Darwin imports are reported")
    func systemImportFixtures() {
        func check(_ text: String) -> [String] {
            PlatformCheck.unguardedSystemImports(in: [File(path: "Sources/Fixture/Clock.swift", text: text)])
        }
        #expect(check("import Foundation\nimport Glibc\n") == ["Sources/Fixture/Clock.swift:2: import Glibc outside #if canImport(Glibc)"])
        #expect(check("#if os(Linux)\nimport Glibc\n#endif\n").count == 1)
        #expect(check("#if !canImport(Glibc)\nimport Glibc\n#endif\n").count == 1)
        #expect(check("#if canImport(Darwin)\nimport Darwin\n#else\nimport Glibc\n#endif\n")
                == ["Sources/Fixture/Clock.swift:4: import Glibc outside #if canImport(Glibc)"])
        #expect(check("// import Darwin\nlet s = \"import Glibc\"\n") == [])
        #expect(check("#if canImport(Glibc)\nimport Glibc\n#elseif canImport(Darwin)\n@preconcurrency import Darwin\n#endif\n") == [])
        #expect(check("#if !canImport(Darwin)\n#else\nimport Darwin\n#endif\n") == [])
        #expect(check("#if canImport(Glibc)\n#if DEBUG\nimport Glibc\n#endif\n#endif\n") == [])
    }
}
