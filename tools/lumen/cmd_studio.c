/*
 * `lumen studio`: the local web studio of the film effects (docs/studio.md), which is the Python
 * package's `python3 -m lumen.studio`; this command starts it with the arguments given. The
 * interpreter is $LUMEN_PYTHON, else python3 on PATH. When this lumen runs from a build folder
 * (its package beside it in <folder>/python), that package goes first on PYTHONPATH, so the
 * studio uses this build.
 */
#define _GNU_SOURCE /* execvp, setenv */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: lumen studio [--port N] [--host ADDR] [--open] [IMAGE] [studio options]\n"
    "\n"
    "Starts the film studio (python3 -m lumen.studio): a local web page to try the film\n"
    "stocks on an image with sliders for halation, bloom and grain and a device switch; the\n"
    "page's address is printed first. 'lumen studio --help' prints the studio's own options.\n"
    "Needs the Python package (python/, built with -DLUMEN_PYTHON=ON; a build folder's package\n"
    "is found by itself) and NumPy. $LUMEN_PYTHON names the interpreter (default: python3).\n"
    "See docs/studio.md.\n";

/* <folder of this executable>/python, when it holds the lumen package. */
static bool build_package(char *buf, size_t size)
{
    char exe[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return false;
    *slash = '\0';
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s/python/lumen/studio/__init__.py", exe);
    if (access(probe, R_OK) != 0) return false;
    return snprintf(buf, size, "%s/python", exe) < (int)size;
}

int cmd_studio(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--lumen-help")) {
        fputs(usage, stdout);
        return CLI_EXIT_OK;
    }
    char pkg[PATH_MAX], path[2 * PATH_MAX + 2];
    if (build_package(pkg, sizeof pkg)) {
        const char *old = getenv("PYTHONPATH");
        snprintf(path, sizeof path, "%s%s%s", pkg, old && *old ? ":" : "", old ? old : "");
        setenv("PYTHONPATH", path, 1);
    }
    const char *py = getenv("LUMEN_PYTHON");
    if (!py || !*py) py = "python3";
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (!args) {
        cli_error("studio", "out of memory");
        return CLI_EXIT_FAIL;
    }
    args[0] = (char *)py;
    args[1] = "-m";
    args[2] = "lumen.studio";
    for (int i = 1; i < argc; i++)
        args[i + 2] = argv[i];
    fflush(NULL);
    execvp(py, args);
    cli_error("studio", "cannot run %s (%s): the studio is the Python package's "
                        "'python3 -m lumen.studio'; set LUMEN_PYTHON to an interpreter that has "
                        "it (lumen studio --lumen-help)",
              py, strerror(errno));
    free(args);
    return CLI_EXIT_FAIL;
}
