/*
 * Sharing the CPU with the host program (docs/architecture.md, "CPU teams"): the OpenMP wait
 * policy lumen asks for, and the CPU quota of the cgroup the process runs in.
 *
 * libgomp's idle threads spin after every parallel region (GOMP_SPINCOUNT 300000 pause loops,
 * milliseconds) unless told otherwise; on a machine busy with the host's own work those spins
 * take the cores that work needs. libgomp reads its environment once, in its own ELF
 * constructor, which runs before lumen's: a setenv from lumen's constructor is too late. The
 * Python package sets os.environ before it loads its extension. A program (the CLI, the C
 * tests) calls lumen_share_cpu_preinit from its .preinit_array (LUMEN_SHARE_CPU_AT_START),
 * which runs before every shared library's initialiser, but a setenv there is lost too: libc's
 * own initialiser, which runs after it, sets environ back to the array the kernel gave
 * (measured: a preinit setenv, then a library constructor's getenv returns NULL). So the
 * preinit function borrows one slot of that very array for "GOMP_SPINCOUNT=...", and lumen's
 * constructor, which runs after libgomp's, gives the slot back: the program and its children
 * see the environment the user gave. Re-executing the program with the variable set would
 * also work, at about 4 ms a start.
 */
#define _GNU_SOURCE /* putenv, unsetenv */
#include "internal.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set by the constructor below; libgomp (a dependency) has read its environment by then. */
static bool omp_started;
static char spin_entry[] = "GOMP_SPINCOUNT=" LUMEN_OMP_SPINCOUNT;
/* The slot of the startup environment lent to spin_entry, and what it held. */
static char **lent_slot;
static char *lent_entry;
/* What libgomp saw, described once by the constructor (lumen_cpu_wait_policy). */
static char policy[160] = "unknown (lumen's constructor has not run)";

static const char *env_value(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Whether a startup variable may be missing while the libraries' constructors run: none of
 * the runtime's, loader's, allocator's or locale's, which those constructors may read. */
static bool lendable(const char *entry)
{
    static const char *const kept[] = {"OMP_",    "GOMP_",  "KMP_", "LD_",  "GLIBC_",
                                       "MALLOC_", "LUMEN_", "LC_",  "LANG", "TZ",
                                       "PATH",    "HOME",   "TMP"};
    if (!strchr(entry, '=')) return false;
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        if (!strncmp(entry, kept[i], strlen(kept[i]))) return false;
    return true;
}

/* "_" (the shell's last argument, read by no library) if present, else the last lendable one. */
static char **slot_to_lend(char **envp)
{
    char **found = NULL;
    for (char **e = envp; *e; e++) {
        if (!strncmp(*e, "_=", 2)) return e;
        if (lendable(*e)) found = e;
    }
    return found;
}

/* Whether envp sets name to a non-empty value. getenv cannot tell yet: before libc's
 * initialiser has run, its environ is still NULL. */
static bool envp_sets(char **envp, const char *name)
{
    const size_t n = strlen(name);
    for (char **e = envp; *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=' && (*e)[n + 1]) return true;
    return false;
}

int lumen_share_cpu_preinit(char **envp)
{
    if (omp_started || !envp) return -1;
    if (envp_sets(envp, "OMP_WAIT_POLICY") || envp_sets(envp, "GOMP_SPINCOUNT")) return 0;
    char **slot = slot_to_lend(envp);
    if (!slot) return -1; /* an empty environment: libgomp's default stands */
    lent_slot = slot, lent_entry = *slot;
    *slot = spin_entry;
    return 1;
}

/* Gives the lent slot back; if something copied the environment meanwhile (a setenv), the copy
 * is mended instead. */
static void give_slot_back(void)
{
    *lent_slot = lent_entry;
    const char *v = getenv("GOMP_SPINCOUNT");
    if (v && v == spin_entry + strlen("GOMP_SPINCOUNT=")) {
        unsetenv("GOMP_SPINCOUNT");
        putenv(lent_entry);
    }
}

__attribute__((constructor)) static void note_omp_started(void)
{
    omp_started = true;
    const char *wait = env_value("OMP_WAIT_POLICY"), *spin = env_value("GOMP_SPINCOUNT");
    if (lent_slot)
        snprintf(policy, sizeof policy, "GOMP_SPINCOUNT=%s (lumen's default)", LUMEN_OMP_SPINCOUNT);
    else if (wait || spin)
        snprintf(policy, sizeof policy, "%s%s%s%s%s (the environment)",
                 wait ? "OMP_WAIT_POLICY=" : "", wait ? wait : "", wait && spin ? " " : "",
                 spin ? "GOMP_SPINCOUNT=" : "", spin ? spin : "");
    else
        snprintf(policy, sizeof policy, "libgomp's default (spins about 3 ms after each region)");
    if (lent_slot) give_slot_back();
}

const char *lumen_cpu_wait_policy(void)
{
    return policy;
}

/* ---- the cgroup's CPU quota ---------------------------------------------------------------- */

/* The CPUs a quota over a period allows, rounded up (1.5 CPUs: 2 threads, each less busy). */
static int quota_cpus(long long quota, long long period)
{
    if (quota <= 0 || period <= 0) return 0;
    long long n = (quota + period - 1) / period;
    return n > LUMEN_MAX_THREADS ? LUMEN_MAX_THREADS : (int)n;
}

/* dir/name opened for reading; NULL also when the path does not fit. */
static FILE *open_in(const char *dir, const char *name)
{
    char path[4200];
    const int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    return n > 0 && (size_t)n < sizeof path ? fopen(path, "r") : NULL;
}

/* cgroup v2: "max 100000" or "150000 100000" in dir/cpu.max; 0: none or unreadable. */
static int v2_cpus(const char *dir)
{
    char quota[32];
    long long period = 0;
    FILE *f = open_in(dir, "cpu.max");
    if (!f) return 0;
    const bool ok = fscanf(f, "%31s %lld", quota, &period) == 2;
    fclose(f);
    return ok && strcmp(quota, "max") != 0 ? quota_cpus(atoll(quota), period) : 0;
}

static long long read_ll(const char *dir, const char *name)
{
    long long v = 0;
    FILE *f = open_in(dir, name);
    if (!f) return 0;
    if (fscanf(f, "%lld", &v) != 1) v = 0;
    fclose(f);
    return v;
}

/* cgroup v1: cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us. */
static int v1_cpus(const char *dir)
{
    return quota_cpus(read_ll(dir, "cpu.cfs_quota_us"), read_ll(dir, "cpu.cfs_period_us"));
}

/* The smallest quota from mount/path up to mount itself (a parent's quota binds its children;
 * in a container the path named in /proc/self/cgroup is often the host's and absent, and the
 * container's own cgroup is the mount's root). */
static int smallest_quota(const char *mount, const char *path, int (*cpus)(const char *))
{
    char dir[4200];
    int best = 0;
    const int len = snprintf(dir, sizeof dir, "%s%s", mount, path);
    if (len < 0 || (size_t)len >= sizeof dir) return 0;
    for (;;) {
        const int n = cpus(dir);
        if (n > 0 && (best == 0 || n < best)) best = n;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < strlen(mount)) break;
        *slash = '\0';
    }
    return best;
}

/* Whether the comma-separated list names controller (v1 lines: "cpu,cpuacct", "cpuacct,cpu"). */
static bool has_controller(const char *list, const char *controller)
{
    const size_t n = strlen(controller);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, controller, n) && (p[n] == ',' || p[n] == '\0')) return true;
    return false;
}

static int min_nonzero(int a, int b)
{
    return a == 0 ? b : b == 0 ? a : a < b ? a : b;
}

/* The smallest quota under root/sys/fs/cgroup<sub> along the cgroup path cg. */
static int quota_under(const char *root, const char *sub, const char *cg, int (*cpus)(const char *))
{
    char mount[4200];
    const int n = snprintf(mount, sizeof mount, "%s/sys/fs/cgroup%s", root, sub);
    return n > 0 && (size_t)n < sizeof mount ? smallest_quota(mount, cg, cpus) : 0;
}

/* One line of /proc/self/cgroup, "ID:CONTROLLERS:PATH": its quota, or 0. */
static int line_quota(const char *root, char *line)
{
    char *ctrl = strchr(line, ':'), *cg = ctrl ? strchr(ctrl + 1, ':') : NULL;
    if (!cg) return 0;
    *cg++ = '\0', ctrl++;
    cg[strcspn(cg, "\n")] = '\0';
    if (!strcmp(cg, "/")) cg = ""; /* the root itself: no "//" in the paths */
    if (!*ctrl) /* "0::/path": cgroup v2 (at /sys/fs/cgroup, or .../unified when hybrid) */
        return min_nonzero(quota_under(root, "", cg, v2_cpus),
                           quota_under(root, "/unified", cg, v2_cpus));
    if (!has_controller(ctrl, "cpu")) return 0;
    char sub[256]; /* v1: "4:cpu,cpuacct:/path", mounted as cpu,cpuacct (and linked as cpu) */
    const int n = snprintf(sub, sizeof sub, "/%s", ctrl);
    return min_nonzero(n > 0 && (size_t)n < sizeof sub ? quota_under(root, sub, cg, v1_cpus) : 0,
                       quota_under(root, "/cpu", cg, v1_cpus));
}

int lumen_cgroup_cpus(const char *root)
{
    char path[4200], line[4200];
    const int n = snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = n > 0 && (size_t)n < sizeof path ? fopen(path, "r") : NULL;
    if (!f) return 0;
    int best = 0;
    while (fgets(line, sizeof line, f))
        best = min_nonzero(best, line_quota(root, line));
    fclose(f);
    return best;
}
