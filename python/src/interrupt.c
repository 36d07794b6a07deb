/*
 * Ctrl-C during a long call (docs/faults.md, "Interruption").
 *
 * A call runs with the GIL released, so Python's SIGINT handler only notes the signal; the
 * KeyboardInterrupt it raises would wait for the whole C call. So SIGINT's C-level handler is
 * wrapped: ours sets `pending` and then calls Python's (which notes the signal as before), and
 * a call on the main thread gets an interrupt hook that reads `pending`: the op stops at its
 * next tile or band with LUMEN_ERR_INTERRUPTED, and PyErr_CheckSignals then runs Python's
 * handler, which raises KeyboardInterrupt.
 *
 * Only while SIGINT's Python handler is signal.default_int_handler: a handler of the user's
 * may choose not to raise, and then an interrupted call would have no result to return, so
 * such calls run to the end as before. Python's signal.signal() reinstalls its own C handler;
 * ours is wrapped around it again by the first call that runs CHECK_AFTER_S (the hook checks
 * then, from whichever thread polls: sigaction is thread-safe), not by every call: a
 * sigaction per call was a system call per call, 0.9 us of a 16 x 16 filter's 5.7 (VM guest),
 * and a call shorter than that needs no hook. Calls on other threads never stop (Python
 * delivers KeyboardInterrupt to the main thread only).
 */
#include "lumen_py.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

/* How long a call runs before its hook makes sure SIGINT's handler is still ours. */
#define CHECK_AFTER_S 0.005

static atomic_int pending;       /* SIGINT arrived since the main thread's last arm */
static struct sigaction chained; /* the handler ours wraps (Python's) */
static PyObject *getsignal, *default_handler, *sigint_obj; /* signal.getsignal & co. */
static unsigned long main_ident; /* the main thread, 0 until known (reset in a fork) */
static atomic_bool wrapped_once; /* ours was installed once: later arms skip the check */
static atomic_int check_due;     /* this call's hook should check ours is still installed */
static double armed_at;          /* when the main thread's current call was armed (seconds) */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static bool wrap_handler(void);

static void on_sigint(int sig, siginfo_t *info, void *uc)
{
    atomic_store(&pending, 1);
    if (chained.sa_flags & SA_SIGINFO)
        chained.sa_sigaction(sig, info, uc);
    else if (chained.sa_handler != SIG_DFL && chained.sa_handler != SIG_IGN)
        chained.sa_handler(sig);
}

static int poll_sigint(void *arg)
{
    (void)arg;
    /* once per long call, by one of its threads: signal.signal() may have replaced ours */
    if (atomic_load_explicit(&check_due, memory_order_acquire) &&
        now_s() - armed_at > CHECK_AFTER_S && atomic_exchange(&check_due, 0))
        wrap_handler();
    return atomic_load_explicit(&pending, memory_order_relaxed);
}

/* After fork() the forking thread is the child's main thread. */
static void forget_main(void)
{
    main_ident = 0;
}

/* 1 on the main thread; -1 with an exception set. */
static int on_main_thread(void)
{
    if (!main_ident) {
        PyObject *threading = PyImport_ImportModule("threading");
        PyObject *main = threading ? PyObject_CallMethod(threading, "main_thread", NULL) : NULL;
        PyObject *ident = main ? PyObject_GetAttrString(main, "ident") : NULL;
        Py_XDECREF(threading);
        Py_XDECREF(main);
        if (!ident) return -1;
        main_ident = PyLong_AsUnsignedLong(ident);
        Py_DECREF(ident);
        if (PyErr_Occurred()) return -1;
        static int atfork;
        if (!atfork) atfork = 1, pthread_atfork(NULL, NULL, forget_main);
    }
    return PyThread_get_thread_ident() == main_ident;
}

/* 1 when SIGINT's Python handler is signal.default_int_handler; -1 with an exception set. */
static int default_sigint(void)
{
    if (!getsignal) {
        /* _signal's getsignal returns the handler as it is; signal.getsignal converts it to an
         * enum first, which for a function raises and catches two exceptions in enum.py: 3-4 us
         * on every call of every op, most of lumen's whole Python overhead on small images. */
        PyObject *signal = PyImport_ImportModule("_signal");
        if (!signal) {
            PyErr_Clear();
            signal = PyImport_ImportModule("signal");
        }
        if (!signal) return -1;
        getsignal = PyObject_GetAttrString(signal, "getsignal");
        default_handler = PyObject_GetAttrString(signal, "default_int_handler");
        Py_DECREF(signal);
        sigint_obj = PyLong_FromLong(SIGINT);
        if (!getsignal || !default_handler || !sigint_obj) {
            Py_CLEAR(getsignal);
            Py_CLEAR(default_handler);
            Py_CLEAR(sigint_obj);
            return -1;
        }
    }
    PyObject *h = PyObject_CallOneArg(getsignal, sigint_obj);
    if (!h) return -1;
    const int is_default = h == default_handler;
    Py_DECREF(h);
    return is_default;
}

/* Wraps SIGINT's C handler when it is Python's (not yet ours, not SIG_DFL/SIG_IGN). */
static bool wrap_handler(void)
{
    struct sigaction cur;
    if (sigaction(SIGINT, NULL, &cur)) return false;
    if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigint) return true;
    if (!(cur.sa_flags & SA_SIGINFO) && (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN))
        return false;
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = on_sigint;
    ours.sa_mask = cur.sa_mask;
    ours.sa_flags = (cur.sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
    chained = cur; /* before ours is live: the handler reads it */
    return sigaction(SIGINT, &ours, NULL) == 0;
}

int lumenpy_interrupt_arm(int (**poll)(void *))
{
    *poll = NULL;
    int r = on_main_thread();
    if (r <= 0) return r;
    if ((r = default_sigint()) <= 0) return r;
    if (atomic_load(&wrapped_once)) {
        armed_at = now_s();
        atomic_store(&check_due, 1); /* poll_sigint checks, if the call runs long enough */
    } else {
        if (!wrap_handler()) return 0;
        atomic_store(&wrapped_once, 1);
    }
    atomic_store(&pending, 0);
    /* A Ctrl-C noted before the flag was cleared would otherwise wait for the whole call. */
    if (PyErr_CheckSignals() < 0) return -1;
    *poll = poll_sigint;
    return 0;
}

PyObject *lumenpy_raise_interrupted(void)
{
    if (PyErr_CheckSignals() < 0) return NULL;
    /* The handler ran already (or was changed meanwhile): still no result to return. */
    PyErr_SetString(PyExc_KeyboardInterrupt, lumen_last_error());
    return NULL;
}
