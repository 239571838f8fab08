#ifndef SESSIONMESH_CSQLITE_SHIM_H
#define SESSIONMESH_CSQLITE_SHIM_H
#include <sqlite3.h>
#include <malloc.h>
#include <stdio.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift cannot import.
static inline void (*csqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }

/// Gives free heap at the top of glibc's arenas back to the system (`malloc_trim`, which Swift's
/// Glibc module does not import). Returns 1 when memory was released.
static inline int meshd_trim_heap(void) { return malloc_trim(0); }

/// Line-buffers C's stdout, which Swift's `print` writes through (Swift 6 does not let code
/// touch the global `stdout`), so a benchmark's lines reach a pipe or a file as they are printed.
static inline void meshd_line_buffer_stdout(void) { setvbuf(stdout, NULL, _IOLBF, 0); }
#endif
