#if canImport(Darwin)
import Foundation

// Foundation's `UndoManager` as the platform side of `UndoBridge`.
//
// Compiled only where Darwin's Foundation is (Apple platforms); it cannot be compiled on the
// Linux machines that build and test this package, so it is kept to the one method UndoManager
// lacks. Everything else the bridge does is `UndoBridge.swift`, tested on every platform against
// a test double with UndoManager's stack rules (`Tests/ListTableTests/UndoBridgeTests.swift`);
// `levelsOfUndo`, `setActionName(_:)` and `removeAllActions()` are UndoManager's own.
extension UndoManager: UndoRegistering {
    /// Registers `handler` with `registerUndo(withTarget:handler:)`. UndoManager runs its
    /// actions on the main thread (it is the main thread's undo manager of a window or view).
    public func registerUndoHandler(_ handler: @escaping @MainActor () -> Void) {
        registerUndo(withTarget: self) { _ in
            MainActor.assumeIsolated { handler() }
        }
    }
}
#endif
