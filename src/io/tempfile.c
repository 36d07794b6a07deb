/*
 * Temporary files of atomic writes, and their debris (docs/io.md, "Writes").
 *
 * A write goes to "<dir>/.<name>.lumen-tmp-<pid>-XXXXXX" and is renamed over
 * the destination when complete. Two ways it can be left behind:
 *   - SIGINT/SIGTERM/SIGHUP whose action ends the process: while any
 *     temporary exists, handlers are installed that unlink every registered
 *     temporary (unlink is async-signal-safe) and then run the action that was
 *     there before: the previous handler, or the default one re-raised. Where
 *     the previous handler returns (Python's SIGINT handler only sets a flag),
 *     nothing is unlinked: the write goes on and completes;
 *   - SIGKILL, which nothing can catch: the pid in the name lets the next
 *     write into that folder (once per folder per process) remove temporaries
 *     whose process no longer exists.
 * The registry is a fixed array of atomic pointers: a signal handler can read
 * it while other threads add and remove entries, with no lock.
 */
#define _POSIX_C_SOURCE 200809L

#include "io_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TEMP_TAG ".lumen-tmp-"
/* Concurrent writes tracked for signals; more still work, they just are not cleaned on a signal. */
#define TEMP_SLOTS 256
/* Folders already swept for stale temporaries by this process. */
#define SWEPT_DIRS 64

static _Atomic(char *) temp_slots[TEMP_SLOTS];

static const int temp_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_SIGNALS (sizeof temp_signals / sizeof temp_signals[0])
static struct sigaction temp_previous[N_SIGNALS];
static bool temp_installed[N_SIGNALS];
static int temp_active; /* registered temporaries; handlers are installed while > 0 */
static pthread_mutex_t temp_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the signal handler -------------------------------------------------- */

static void unlink_registered(void)
{
    for (size_t i = 0; i < TEMP_SLOTS; i++) {
        /* exchange: exactly one of this handler and the writer owns the name after it */
        char *p = atomic_exchange(&temp_slots[i], NULL);
        if (p) unlink(p); /* not freed: the process ends, and free is not signal-safe */
    }
}

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    size_t k = 0;
    while (k < N_SIGNALS && temp_signals[k] != sig)
        k++;
    if (k == N_SIGNALS) return;
    const struct sigaction *prev = &temp_previous[k];
    if (prev->sa_flags & SA_SIGINFO) {
        prev->sa_sigaction(sig, info, uctx);
        return;
    }
    if (prev->sa_handler == SIG_IGN) return;
    if (prev->sa_handler != SIG_DFL) {
        prev->sa_handler(sig);
        return;
    }
    /* The default action ends the process: clean up, then take it (the signal is blocked in
     * this handler, so the re-raised one arrives as it returns). */
    const int saved = errno;
    unlink_registered();
    signal(sig, SIG_DFL);
    raise(sig);
    errno = saved;
}

/* Called with temp_lock held, when the first temporary is registered. Signals already ignored
 * stay ignored (nothing would end the process); other handlers are chained to. */
static void install_handlers(void)
{
    for (size_t k = 0; k < N_SIGNALS; k++) {
        struct sigaction sa = {0}, old;
        if (sigaction(temp_signals[k], NULL, &old) != 0 ||
            (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)) {
            temp_installed[k] = false;
            continue;
        }
        temp_previous[k] = old;
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        temp_installed[k] = sigaction(temp_signals[k], &sa, NULL) == 0;
    }
}

/* With temp_lock held, when the last one goes: restores what was there, unless someone
 * replaced our handler meanwhile (then theirs stays). */
static void remove_handlers(void)
{
    for (size_t k = 0; k < N_SIGNALS; k++) {
        struct sigaction cur;
        if (!temp_installed[k] || sigaction(temp_signals[k], NULL, &cur) != 0) continue;
        if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_signal)
            sigaction(temp_signals[k], &temp_previous[k], NULL);
        temp_installed[k] = false;
    }
}

static void register_temp(char *tmp)
{
    pthread_mutex_lock(&temp_lock);
    if (temp_active++ == 0) install_handlers();
    pthread_mutex_unlock(&temp_lock);
    for (size_t i = 0; i < TEMP_SLOTS; i++) {
        char *expected = NULL;
        if (atomic_compare_exchange_strong(&temp_slots[i], &expected, tmp)) return;
    }
}

static void unregister_temp(char *tmp)
{
    for (size_t i = 0; i < TEMP_SLOTS; i++) {
        char *expected = tmp;
        if (atomic_compare_exchange_strong(&temp_slots[i], &expected, NULL)) break;
    }
    pthread_mutex_lock(&temp_lock);
    if (--temp_active == 0) remove_handlers();
    pthread_mutex_unlock(&temp_lock);
}

void lumen_io_temp_release(char *tmp)
{
    if (!tmp) return;
    unregister_temp(tmp);
    free(tmp);
}

/* ---- stale temporaries --------------------------------------------------- */

/* The pid of "...lumen-tmp-<pid>-XXXXXX", or 0 if the name is not one of ours. */
static pid_t temp_pid(const char *name)
{
    if (name[0] != '.') return 0;
    const char *tag = strstr(name, TEMP_TAG);
    if (!tag) return 0;
    const char *p = tag + strlen(TEMP_TAG);
    long long pid = 0;
    for (; *p >= '0' && *p <= '9' && pid < 1 << 30; p++)
        pid = pid * 10 + (*p - '0');
    if (*p != '-' || strlen(p + 1) != 6 || pid <= 0) return 0;
    return (pid_t)pid;
}

static bool process_gone(pid_t pid)
{
    return kill(pid, 0) != 0 && errno == ESRCH;
}

/* True the first time this process sees the folder (by device and inode). */
static bool first_visit(const char *dir)
{
    static struct {
        dev_t dev;
        ino_t ino;
    } seen[SWEPT_DIRS];
    static int n_seen;
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    struct stat st;
    if (stat(dir, &st) != 0) return false;
    bool first = true;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_seen && first; i++)
        first = !(seen[i].dev == st.st_dev && seen[i].ino == st.st_ino);
    if (first && n_seen < SWEPT_DIRS) {
        seen[n_seen].dev = st.st_dev;
        seen[n_seen].ino = st.st_ino;
        n_seen++;
    }
    pthread_mutex_unlock(&lock);
    return first;
}

/* Removes our own stale temporaries (regular files, owned by this user, process gone). */
static void sweep_stale(const char *dir)
{
    if (!first_visit(dir)) return;
    DIR *d = opendir(dir);
    if (!d) return;
    const int dfd = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        const pid_t pid = temp_pid(e->d_name);
        struct stat st;
        if (!pid || pid == getpid() || !process_gone(pid)) continue;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        if (unlinkat(dfd, e->d_name, 0) == 0)
            lumen_log(LUMEN_LOG_INFO, "removed a stale temporary file %s/%s", dir, e->d_name);
    }
    closedir(d);
}

/* ---- creation ------------------------------------------------------------ */

/* Six characters that differ between processes, threads and attempts. */
static void temp_suffix(char out[7])
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    static atomic_uint_fast64_t counter;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t z = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 40) ^
                 (atomic_fetch_add(&counter, 1) * 0x9E3779B97F4A7C15ull);
    /* splitmix64 finaliser: spreads the bits so the suffix looks random. */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (int i = 0; i < 6; i++, z /= 62)
        out[i] = alphabet[z % 62];
    out[6] = '\0';
}

/* Not mkstemp: that creates the file 0600, while open(..., 0666) gives the usual
 * umask-based mode. An existing destination's mode is kept. */
lumen_status lumen_io_temp_create(const char *path, char **tmp_out, int *fd_out)
{
    const char *slash = strrchr(path, '/');
    const size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    const char *name = path + dir_len;
    /* Keeps the temp name within NAME_MAX for long destination names. */
    const size_t name_len = strlen(name) > 200 ? 200 : strlen(name);
    const size_t len = dir_len + name_len + 48;
    char *tmp = malloc(len);
    if (!tmp) return lumen_set_error(LUMEN_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    snprintf(tmp, len, "%.*s", dir_len ? (int)dir_len : 1, dir_len ? path : ".");
    sweep_stale(tmp);

    for (int attempt = 0; attempt < 100; attempt++) {
        char suffix[7];
        temp_suffix(suffix);
        snprintf(tmp, len, "%.*s.%.*s" TEMP_TAG "%lld-%s", (int)dir_len, path, (int)name_len, name,
                 (long long)getpid(), suffix);
        /* Registered before it exists: a signal between open and registration would leave it.
         * The name holds our pid, so an existing one is our own debris, never another's. */
        register_temp(tmp);
        int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        const int err = errno;
        if (fd >= 0) {
            struct stat st;
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
                (void)fchmod(fd, st.st_mode & 07777); /* best effort */
            *tmp_out = tmp;
            *fd_out = fd;
            return LUMEN_OK;
        }
        unregister_temp(tmp);
        if (err != EEXIST) {
            lumen_status s = lumen_set_error(
                LUMEN_ERR_IO, "%s: cannot create a temporary file in '%.*s': %s", path,
                dir_len ? (int)dir_len : 1, dir_len ? path : ".", strerror(err));
            free(tmp);
            return s;
        }
    }
    free(tmp);
    return lumen_set_error(LUMEN_ERR_IO, "%s: cannot create a unique temporary file", path);
}
