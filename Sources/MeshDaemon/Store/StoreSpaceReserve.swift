import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Disk space held back for deletes: a file of `bytes` allocated blocks beside the database.
///
/// When the file system fills up, the last writes to succeed are usually the store's own: the
/// WAL grows until a write fails with SQLITE_FULL. From then on a delete fails too — it needs WAL
/// frames, and a checkpoint that would empty the WAL needs the database file to grow — so acked
/// items could never leave the outbox, nor app-acked items the inbox, and the queue would stay
/// full for good even after everything in it was delivered. The reserve breaks that: a delete
/// that fails for a full disk releases it, runs again in the space it freed, and a checkpoint
/// then truncates the WAL; the reserve is taken back as soon as there is room. New items never
/// get the reserve: a send that fails for a full disk fails as before.
///
/// Not thread-safe: used under the store's lock.
final class StoreSpaceReserve {
    let path: String
    let bytes: Int
    /// Whether the file holds its full size now.
    private(set) var isHeld = false
    /// Whether the reserve is in use: configured (`bytes` > 0) and its file could be made, or
    /// failed only for want of room. A file system that refuses it for another reason (a file
    /// of another user, a read-only folder) leaves the store without a reserve, as with 0 bytes,
    /// and without a checkpoint at every delete to try again.
    private(set) var isEnabled: Bool
    /// How often the reserve was given up for a delete (for counters and tests).
    private(set) var releases = 0
    /// Monotonic instant (ns) of the last failed attempt to take the reserve back.
    private var lastFailedRestore: UInt64?

    /// The reserve for the database at `databasePath` (`<database>-reserve`); takes it at once
    /// when there is room. `bytes` 0: no reserve (nothing is created).
    init(databasePath: String, bytes: Int) {
        path = databasePath + "-reserve"
        self.bytes = max(0, bytes)
        isEnabled = self.bytes > 0
        if isEnabled { take() }
    }

    /// Tries to allocate the file: held, or not for want of room, or disabled for any other failure.
    private func take() {
        let failure = Self.allocate(path: path, bytes: bytes)
        isHeld = failure == 0
        if failure != 0, failure != ENOSPC, failure != EDQUOT { isEnabled = false }
    }

    /// Gives the space back to the file system; false when none was held.
    func release() -> Bool {
        guard isHeld else { return false }
        isHeld = false
        releases += 1
        // Truncate first: the blocks are freed even if another process keeps the file open.
        _ = truncate(path, 0)
        _ = unlink(path)
        return true
    }

    /// Takes the reserve back when it is not held: first `checkpoint` (which can empty the WAL),
    /// then the file. After a failure, tries again only once `retryAfter` has passed, so a
    /// still-full disk does not cost a checkpoint per delete.
    func restore(checkpoint: () -> Void, now: @autoclosure () -> UInt64, retryAfter: UInt64 = 1_000_000_000) {
        guard isEnabled, !isHeld else { return }
        let now = now()    // read only when the reserve is away: this runs after every ack delete
        if let last = lastFailedRestore, now &- last < retryAfter { return }
        checkpoint()
        take()
        lastFailedRestore = isHeld ? nil : now
    }

    /// Creates (or completes) the file with `bytes` allocated, mode 0600; 0, or the errno of the
    /// failure (ENOSPC/EDQUOT: no room; nothing is left behind then).
    static func allocate(path: String, bytes: Int) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return errno }
        defer { _ = close(fd) }
        var status = stat()
        if fstat(fd, &status) == 0, Int(status.st_blocks) * 512 >= bytes, Int(status.st_size) >= bytes { return 0 }
        var result = posix_fallocate(fd, 0, off_t(bytes))
        if result == EOPNOTSUPP || result == EINVAL {
            result = writeZeros(fd: fd, bytes: bytes)
        }
        if result == 0, fsync(fd) != 0 { result = errno }
        if result != 0 {
            _ = ftruncate(fd, 0)
            _ = unlink(path)
        }
        return result
    }

    /// Fills the file with zeros (file systems without `fallocate`); 0 or an errno.
    private static func writeZeros(fd: Int32, bytes: Int) -> Int32 {
        let chunk = [UInt8](repeating: 0, count: 64 << 10)
        var written = 0
        for _ in 0...(bytes / chunk.count + 1) {
            guard written < bytes else { return 0 }
            let count = min(chunk.count, bytes - written)
            let done = chunk.withUnsafeBytes { pwrite(fd, $0.baseAddress, count, off_t(written)) }
            guard done > 0 else { return done < 0 ? errno : ENOSPC }
            written += done
        }
        return written >= bytes ? 0 : ENOSPC
    }
}
