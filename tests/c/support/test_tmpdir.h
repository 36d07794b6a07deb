/* A temporary folder per test program (created by a group setup, removed with all it holds by
 * the group teardown), paths in it, and the status and message checks of the IO tests. */
#ifndef LUMEN_TEST_TMPDIR_H
#define LUMEN_TEST_TMPDIR_H

#include <lumen.h>

#include <stddef.h>

/* Creates /tmp/<prefix>-XXXXXX; 0 on success (a cmocka group setup's return value). */
int ts_tmpdir_make(const char *prefix);
/* Removes the folder and everything in it; 0 on success. */
int ts_tmpdir_remove(void);
/* The folder. */
const char *ts_tmpdir(void);
/* "<folder>/<printf(fmt, ...)>", in one of 8 rotating buffers (valid for 8 calls). */
const char *ts_tpath(const char *fmt, ...);
/* Writes n bytes to path (fails the test on any error). */
void ts_write_bytes(const char *path, const void *data, size_t n);
/* The whole file in a malloc'd buffer (one spare byte at the end); *n its size. */
unsigned char *ts_read_bytes(const char *path, size_t *n);
/* The file's size in bytes (fails the test if it is not there). */
long long ts_file_size(const char *path);
/* Fails (cmocka) unless the last error message contains needle (a path, a reason ...). */
void ts_assert_error_mentions(const char *needle);

/* Fails unless expr returns want, printing the call, both statuses and the last error. */
#define TS_CHECK_STATUS(expr, want)                                                                \
    do {                                                                                           \
        lumen_status s_ = (expr);                                                                  \
        if (s_ != (want))                                                                          \
            print_error("%s returned %d (%s), expected %d; last error: \"%s\"\n", #expr, (int)s_,  \
                        lumen_status_string(s_), (int)(want), lumen_last_error());                 \
        assert_int_equal(s_, (want));                                                              \
    } while (0)

#endif
