#!/usr/bin/python3
"""lumen against OpenCV, SciPy and PyTorch: a wrapper that runs `python3 -m lumen.bench`.

    /usr/bin/python3 bench/compare.py [--size WxH] [--repeat N] [--threads N] [--case NAMES]
                                      [--json] [--no-scipy] [--no-torch] ...

The arguments go to lumen.bench unchanged (see `--help`; the cases, the peer calls and the
targets are in lumen/bench.py's docstring). lumen is timed in this process through the Python
package; when `import lumen` fails, the package built in <repo>/build/python is used, and when
that build lacks bench.py, <repo>/python/lumen/bench.py is loaded from the source tree.
`--lumen BINARY` (and $LUMEN_BIN) belonged to the old subprocess design and are ignored.
"""

import importlib
import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def import_lumen():
    """The lumen package: installed, else the build tree's."""
    try:
        return importlib.import_module("lumen")
    except ImportError:
        sys.path.insert(0, str(REPO / "build" / "python"))
        try:
            return importlib.import_module("lumen")
        except ImportError as e:
            sys.exit(f"compare.py: cannot import lumen ({e}); build it with `make build` "
                     f"(it lands in {REPO / 'build' / 'python'})")


def import_bench():
    """lumen.bench from the package, else from the source tree (a build older than bench.py)."""
    import_lumen()
    try:
        return importlib.import_module("lumen.bench")
    except ModuleNotFoundError:
        spec = importlib.util.spec_from_file_location(
            "lumen.bench", REPO / "python" / "lumen" / "bench.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["lumen.bench"] = mod
        spec.loader.exec_module(mod)
        return mod


def drop_lumen_flag(argv):
    """argv without --lumen BINARY / --lumen=BINARY (the old design's option)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--lumen":
            skip = True
        elif not a.startswith("--lumen="):
            out.append(a)
    return out


if __name__ == "__main__":
    sys.exit(import_bench().main(drop_lumen_flag(sys.argv[1:])))
