/*
 * guard.c (rankgate._native._reader): the guard around a scan of a memory map. Entry points:
 *
 *   faults    SIGBUS faults of guarded scans caught so far (a file cut short while mapped; tests)
 *   FileCut   the exception a guarded scan raises when it read past the end of a file cut short (an OSError)
 *
 * and, for lines.c and jsonl.c (reader.h): guarded, guard_ready_or_error, own_ids, file_cut.
 */
#include "native.h"
#include "reader.h"

/* ---------------------------------------------------------------------------------------------- */
/* The guard around a scan of a memory map. A file that another process cuts short while it is mapped
 * makes a read of a page past its new end raise SIGBUS, which would end the process. A scan runs
 * under guarded(): a SIGBUS in the thread of a guarded scan jumps back out of the scan, which then
 * reports FileCut (the caller says "changed while it was read"); any other SIGBUS goes to the handler
 * that was there before (by default: the process ends, as it did). The scans only read the map:
 * nothing they hold is left half-written by the jump, and the caller frees what they allocated. */

static PyObject *FileCut; /* rankgate._native._reader.FileCut (an OSError) */
static unsigned long faults_caught = 0; /* (tests: faults() counts the jumps) */

#if defined(__unix__) || defined(__APPLE__)
#include <setjmp.h>
#include <signal.h>
#define RG_GUARD 1

static _Thread_local sigjmp_buf *guard_jump = NULL;
static struct sigaction before_bus;
static int guard_ready = 0;

static void on_bus(int sig, siginfo_t *info, void *context) {
    sigjmp_buf *jump = guard_jump;
    if (jump != NULL) { /* (also a SIGBUS re-raised by a handler installed after this one, such as faulthandler's) */
        guard_jump = NULL;
        faults_caught++;
        siglongjmp(*jump, 1);
    }
    if (before_bus.sa_flags & SA_SIGINFO) {
        if (before_bus.sa_sigaction != NULL) before_bus.sa_sigaction(sig, info, context);
        return;
    }
    if (before_bus.sa_handler == SIG_IGN) return;
    if (before_bus.sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL); /* (the fault happens again on return, with the default action) */
        return;
    }
    before_bus.sa_handler(sig);
}

/* Installed once, at the first guarded scan (with the GIL held: no two threads get here at once). */
static int guard_install(void) {
    if (guard_ready) return 0;
    struct sigaction act;
    memset(&act, 0, sizeof(act));
    act.sa_sigaction = on_bus;
    act.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&act.sa_mask);
    if (sigaction(SIGBUS, &act, &before_bus) != 0) return -1;
    guard_ready = 1;
    return 0;
}
#endif

/* fn(arg) with the guard on; *cut = 1 (and -1 returned) when a SIGBUS ended it. Not inlined: no
 * variable of the caller lives across the jump. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
int guarded(scan_fn fn, void *arg, int *cut) {
    *cut = 0;
#ifdef RG_GUARD
    if (!guard_ready) return fn(arg); /* (guard_install failed: unguarded, as before) */
    sigjmp_buf jump;
    if (sigsetjmp(jump, 1) != 0) {
        *cut = 1;
        return -1;
    }
    guard_jump = &jump;
    const int status = fn(arg);
    guard_jump = NULL;
    return status;
#else
    return fn(arg);
#endif
}

/* Call with the GIL held before a guarded scan; -1 with an exception set if the guard is not there. */
int guard_ready_or_error(void) {
#ifdef RG_GUARD
    if (guard_install() != 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
#endif
    return 0;
}

/* The ids a scan points at (in the buffer, which may be a map) copied into one allocation, the
 * pointers moved to the copies: made under the guard, so that the ids are decoded (with the GIL held,
 * where no jump may land) from memory no other process can take away. */
int own_ids(const unsigned char **ids, const int32_t *lens, size_t n, unsigned char **arena) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += (size_t)lens[i];
    unsigned char *a = (unsigned char *)malloc(total ? total : 1);
    if (!a) return -1;
    *arena = a;
    for (size_t i = 0, at = 0; i < n; i++) {
        memcpy(a + at, ids[i], (size_t)lens[i]);
        ids[i] = a + at;
        at += (size_t)lens[i];
    }
    return 0;
}

PyObject *file_cut(void) {
    PyErr_SetString(FileCut, "the mapped file is shorter than when it was mapped (a read past its end raised SIGBUS)");
    return NULL;
}

PyObject *rg_faults(PyObject *self, PyObject *noargs) {
    return PyLong_FromUnsignedLong(faults_caught);
}

int rg_guard_init(PyObject *module) {
    FileCut = PyErr_NewException("rankgate._native._reader.FileCut", PyExc_OSError, NULL);
    if (!FileCut || PyModule_AddObjectRef(module, "FileCut", FileCut) < 0) return -1;
    return 0;
}
