/*
 * Debris of interrupted writes (issue 12, item 6): a child process writing a large image is
 * killed in the middle of the write, while its temporary file exists.
 *   - SIGINT / SIGTERM with the default action: the temporary is removed, and the child still
 *     dies of that signal (the handler chains to the default action);
 *   - SIGINT with a handler that returns (as Python's): the write completes, no debris;
 *   - SIGKILL: the temporary stays (nothing can catch SIGKILL), and the next write into that
 *     folder, by another process, removes it because its pid is dead;
 * and the handlers are installed only while a write is in progress.
 */
#define _XOPEN_SOURCE 700

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs stdarg, stddef, stdint and setjmp first. */
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lumen.h"
#include "test_tmpdir.h"

static int group_setup(void **state)
{
    (void)state;
    return ts_tmpdir_make("lumen-test-io-debris");
}

static int group_teardown(void **state)
{
    (void)state;
    return ts_tmpdir_remove();
}

/* A fresh sub-folder per test, so each starts empty. */
static const char *fresh_dir(const char *name)
{
    static char buf[128];
    snprintf(buf, sizeof buf, "%s/%s", ts_tmpdir(), name);
    assert_int_equal(mkdir(buf, 0755), 0);
    return buf;
}

/* Hidden files in dir (temporaries are ".<name>.lumen-tmp-<pid>-XXXXXX"). */
static int count_hidden(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static volatile sig_atomic_t got_signal;
static void note_signal(int sig)
{
    got_signal = sig;
}

/* The child: writes a 64 MB .npy over and over (each write takes long enough to be caught in
 * the middle), optionally under a SIGINT handler that returns. */
static pid_t spawn_writer(const char *dir, bool own_handler)
{
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid > 0) return pid;
    if (own_handler) {
        struct sigaction sa = {0};
        sa.sa_handler = note_signal;
        sigaction(SIGINT, &sa, NULL);
    }
    const int64_t h = 2048, w = 2048, c = 4;
    float *px = calloc((size_t)(h * w * c), sizeof *px);
    if (!px) _exit(3);
    const lumen_image im = lumen_image_nhwc(px, LUMEN_F32, 1, h, w, c);
    char path[256];
    snprintf(path, sizeof path, "%s/o.npy", dir);
    for (int i = 0; i < 1000; i++) {
        if (lumen_write_image(path, &im) != LUMEN_OK) _exit(4);
        if (own_handler && got_signal) _exit(got_signal == SIGINT ? 0 : 5);
    }
    _exit(6);
}

/* Waits until the child's temporary exists (the write is under way), up to ~20 s. */
static void wait_for_temp(const char *dir)
{
    for (int i = 0; i < 20000 && count_hidden(dir) == 0; i++)
        sleep_ms(1);
    assert_int_equal(count_hidden(dir), 1);
}

static void kill_during_write(int sig)
{
    char name[32];
    snprintf(name, sizeof name, "sig%d", sig);
    const char *dir = fresh_dir(name);
    const pid_t pid = spawn_writer(dir, false);
    wait_for_temp(dir);
    assert_int_equal(kill(pid, sig), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    /* It died of the signal (the default action, chained to), and left nothing behind. */
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), sig);
    assert_int_equal(count_hidden(dir), 0);
}

static void test_sigint_removes_temporary(void **state)
{
    (void)state;
    kill_during_write(SIGINT);
}

static void test_sigterm_removes_temporary(void **state)
{
    (void)state;
    kill_during_write(SIGTERM);
}

/* A handler that returns (Python's SIGINT handler only sets a flag): the write completes. */
static void test_returning_handler_lets_write_finish(void **state)
{
    (void)state;
    const char *dir = fresh_dir("own");
    const pid_t pid = spawn_writer(dir, true);
    wait_for_temp(dir);
    assert_int_equal(kill(pid, SIGINT), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(count_hidden(dir), 0);
    char path[256];
    snprintf(path, sizeof path, "%s/o.npy", dir);
    lumen_image im;
    assert_int_equal(lumen_read_image(path, &im), LUMEN_OK); /* complete, not cut short */
    lumen_image_free(&im);
}

static void test_sigkill_debris_removed_by_next_write(void **state)
{
    (void)state;
    const char *dir = fresh_dir("kill");
    char keep[3][256];
    /* Look-alikes that must survive: a live pid (ours), another name, a folder. */
    snprintf(keep[0], sizeof keep[0], "%s/.x.npy.lumen-tmp-%d-abcdef", dir, (int)getpid());
    snprintf(keep[1], sizeof keep[1], "%s/.x.npy.tmp-1-abcdef", dir);
    snprintf(keep[2], sizeof keep[2], "%s/.y.lumen-tmp-999999999-abcdef", dir);
    for (int i = 0; i < 2; i++)
        fclose(fopen(keep[i], "w"));
    const pid_t pid = spawn_writer(dir, false);
    for (int i = 0; i < 20000 && count_hidden(dir) < 3; i++)
        sleep_ms(1);
    assert_int_equal(count_hidden(dir), 3);
    assert_int_equal(kill(pid, SIGKILL), 0);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(count_hidden(dir), 3); /* the debris SIGKILL leaves */
    assert_int_equal(mkdir(keep[2], 0755), 0);
    /* The next write into the folder, from another process, removes it. */
    const pid_t next = fork();
    assert_true(next >= 0);
    if (next == 0) {
        uint8_t px[4] = {0};
        const lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, 2, 2, 1);
        char path[256];
        snprintf(path, sizeof path, "%s/other.png", dir);
        _exit(lumen_write_image(path, &im) == LUMEN_OK ? 0 : 1);
    }
    assert_int_equal(waitpid(next, &status, 0), next);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(count_hidden(dir), 3); /* the three look-alikes only */
    for (int i = 0; i < 3; i++)
        assert_int_equal(access(keep[i], F_OK), 0);
}

/* Handlers are there only while writing: before and after, SIGINT's action is the caller's. */
static void test_handlers_only_while_writing(void **state)
{
    (void)state;
    struct sigaction before, after;
    assert_int_equal(sigaction(SIGINT, NULL, &before), 0);
    assert_true(before.sa_handler == SIG_DFL);
    uint8_t px[4] = {0};
    const lumen_image im = lumen_image_nhwc(px, LUMEN_U8, 1, 2, 2, 1);
    char path[256];
    snprintf(path, sizeof path, "%s/h.png", ts_tmpdir());
    assert_int_equal(lumen_write_image(path, &im), LUMEN_OK);
    assert_int_equal(sigaction(SIGINT, NULL, &after), 0);
    assert_true(after.sa_handler == SIG_DFL);
    assert_false(after.sa_flags & SA_SIGINFO);
    /* An ignored signal stays ignored. */
    signal(SIGTERM, SIG_IGN);
    assert_int_equal(lumen_write_image(path, &im), LUMEN_OK);
    assert_int_equal(sigaction(SIGTERM, NULL, &after), 0);
    assert_true(after.sa_handler == SIG_IGN);
    signal(SIGTERM, SIG_DFL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handlers_only_while_writing),
        cmocka_unit_test(test_sigint_removes_temporary),
        cmocka_unit_test(test_sigterm_removes_temporary),
        cmocka_unit_test(test_returning_handler_lets_write_finish),
        cmocka_unit_test(test_sigkill_debris_removed_by_next_write),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
