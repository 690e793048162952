import Testing

@available(macOS 13.0, iOS 16.0, watchOS 9.0, tvOS 16.0, *)
extension Trait where Self == TimeLimitTrait {
    /// A guard against a hang, never a verdict on speed: 20 minutes, longer than the whole suite
    /// takes on a busy 2-core machine. A suite that ran in 30 s alone took 225 s beside a release
    /// build and three other builds, past the 2-minute limit it had, and failed for it; so no test
    /// has a limit it could reach by being slow (Docs/Reliability.md, "Tests on a busy machine").
    /// Timing claims are measured against a baseline taken at the same moment, or by counts.
    public static var hangGuard: Self { .timeLimit(.minutes(20)) }
}
