/* The IO tests' temporary folder and checks (test_tmpdir.h). */
#define _XOPEN_SOURCE 700 /* nftw */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka.h needs stdarg, stddef, stdint and setjmp first. */
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "test_tmpdir.h"

static char dir[128];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int ts_tmpdir_make(const char *prefix)
{
    snprintf(dir, sizeof dir, "/tmp/%s-XXXXXX", prefix);
    return mkdtemp(dir) ? 0 : -1;
}

int ts_tmpdir_remove(void)
{
    return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *ts_tmpdir(void)
{
    return dir;
}

const char *ts_tpath(const char *fmt, ...)
{
    static char bufs[8][256];
    static int next;
    char *buf = bufs[next++ % 8];
    int n = snprintf(buf, sizeof bufs[0], "%s/", dir);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof bufs[0] - (size_t)n, fmt, ap);
    va_end(ap);
    return buf;
}

void ts_assert_error_mentions(const char *needle)
{
    if (!strstr(lumen_last_error(), needle))
        print_error("last error \"%s\" does not mention \"%s\"\n", lumen_last_error(), needle);
    assert_non_null(strstr(lumen_last_error(), needle));
}

void ts_write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

unsigned char *ts_read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)len + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return buf;
}

long long ts_file_size(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long long)st.st_size;
}
