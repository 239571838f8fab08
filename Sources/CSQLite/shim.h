#ifndef SESSIONMESH_CSQLITE_SHIM_H
#define SESSIONMESH_CSQLITE_SHIM_H
#include <sqlite3.h>
#include <malloc.h>
#include <stdio.h>
#include <sys/prctl.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import.
static inline void (*csqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }

/// Gives free heap at the top of glibc's arenas back to the system (`malloc_trim`, which Swift's
/// Glibc module does not import). Returns 1 when memory was released.
static inline int meshd_trim_heap(void) { return malloc_trim(0); }

/// Line-buffers C's stdout, which Swift's `print` writes through (Swift 6 does not let code
/// touch the global `stdout`), so a benchmark's lines reach a pipe or a file as they are printed.
static inline void meshd_line_buffer_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }
/// Marks the process not dumpable (`prctl(PR_SET_DUMPABLE, 0)`, variadic, so not callable from
/// Swift): no core dump, no ptrace or /proc/PID/mem by other processes of the same user.
/// Returns 0, or -1 with errno set.
static inline int meshd_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

/// `prctl(PR_GET_DUMPABLE)`: 1 when the process may dump core, 0 when not.
static inline int meshd_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }
#endif
