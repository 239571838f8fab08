import CSQLite
#if canImport(Glibc)
import Glibc
#endif

/// Process-wide protections `meshd` applies at start, before it reads any key.
public enum ProcessHardening {
    /// Turns core dumps off and keeps other processes of the same user from reading this one's
    /// memory (`PR_SET_DUMPABLE` 0): a crash or a debugger must not write the identity key or
    /// channel keys to disk.
    public static func disableCoreDumps() throws(SystemCallError) {
        try systemCall("prctl", "PR_SET_DUMPABLE") { meshd_set_not_dumpable() }
    }

    /// Whether the process may dump core now.
    public static var isDumpable: Bool { meshd_dumpable() == 1 }
}
