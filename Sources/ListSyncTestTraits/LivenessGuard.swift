/// The least time a test waits for something it expects to happen before it gives up: a guard
/// against a hang, never the verdict. A test states the time it expects (half a second, say),
/// and waits at least this long, so that how busy the machine is never decides whether it
/// passes (Docs/Reliability.md, "Tests on a busy machine").
public let livenessGuardSeconds = 60.0
