#!/usr/bin/env python3
"""Fails when an #include crosses lumen's layers the wrong way (docs/architecture.md, "Layers").

    interfaces  tools/, python/src/     may include: the public headers (include/) and their own
    ops         src/ops/                may include: public, core, ops
    core        src/core/               may include: public, core
    io          src/io/                 may include: public, core, io
    backends    src/backends/<name>/    may include: public, core, their own folder
    public      include/                may include: public

Tests (tests/) may reach into any layer: they test the parts. Only quoted includes are checked;
<...> includes are system or other libraries' headers, except <lumen*.h>, which is public.

With --objects DIR (the build's object folder of the library, CMakeFiles/lumen_objects.dir/src),
calls are checked too, by the symbols each layer's objects use (nm): nothing below ops calls an
op (also not a public lumen_* function an op file defines), core and backends do not call io,
and no backend calls another.

Usage: scripts/check-layers.py [--objects DIR] [ROOT]   (exit 1, one line per crossing)
"""
import pathlib
import re
import subprocess
import sys

ARGS = sys.argv[1:]
OBJECTS = None
if ARGS[:1] == ["--objects"]:
    OBJECTS = pathlib.Path(ARGS[1])
    ARGS = ARGS[2:]
ROOT = pathlib.Path(ARGS[0] if ARGS else ".").resolve()
# Quoted includes are found beside the including file, then on the build's include path.
INCLUDE_PATH = ["include", "src/core", "src"]
SOURCES = ("*.c", "*.h", "*.cu", "*.cc", "*.cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    """The layer of a file (a path relative to ROOT), or None outside the checked tree."""
    parts = path.parts
    if parts[0] == "include":
        return "public"
    if parts[0] in ("tools", "python"):
        return "interface:" + "/".join(parts[:2])
    if parts[0] == "src" and len(parts) > 2:
        if parts[1] == "backends":
            return "backend:" + parts[2]
        return parts[1]  # core, ops, io
    return None


def allowed(frm, to):
    if to == "public" or frm == to:
        return True
    if frm.startswith("interface:") or frm == "public":
        return False
    if to == "core":
        return frm in ("ops", "io") or frm.startswith("backend:")
    return False


def resolve(including, name):
    here = (ROOT / including).parent / name
    if here.is_file():
        return here.resolve().relative_to(ROOT)
    for d in INCLUDE_PATH:
        p = ROOT / d / name
        if p.is_file():
            return p.resolve().relative_to(ROOT)
    return None


def symbols(folder, defined):
    """Global symbols the objects under folder define (or use, when not defined)."""
    objs = sorted(str(o) for o in folder.rglob("*.o"))
    if not objs:
        return set()
    opts = ["--defined-only"] if defined else ["--undefined-only"]
    out = subprocess.run(["nm", *opts, *objs], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 2 and (not defined or f[-2] in "TDRBG"):
            names.add(f[-1])
    return names


def call_crossings(objects):
    """(caller layer, callee layer) pairs where the callee's symbols must not be used."""
    layers = {"core": objects / "core", "ops": objects / "ops", "io": objects / "io"}
    for b in sorted(p for p in (objects / "backends").iterdir() if p.is_dir()):
        layers["backend:" + b.name] = b
    defs = {k: symbols(v, True) for k, v in layers.items()}
    uses = {k: symbols(v, False) for k, v in layers.items()}
    forbidden = [(c, "ops") for c in layers if c != "ops"]
    forbidden += [(c, "io") for c in layers if c == "core" or c.startswith("backend:")]
    forbidden += [(a, b) for a in layers for b in layers
                  if a != b and a.startswith("backend:") and b.startswith("backend:")]
    found = []
    for caller, callee in forbidden:
        for name in sorted(uses[caller] & defs[callee]):
            found.append(f"{caller} calls {name}, defined in {callee}")
    return found


def main():
    crossings = []
    if OBJECTS is not None:
        if not (OBJECTS / "core").is_dir():
            print(f"check-layers: {OBJECTS}: no library objects there (build first)")
            return 2
        crossings += call_crossings(OBJECTS)
    for top in ("include", "src", "tools", "python/src"):
        for pattern in SOURCES:
            for f in sorted((ROOT / top).rglob(pattern)):
                rel = f.relative_to(ROOT)
                frm = layer_of(rel)
                if frm is None:
                    continue
                for name in INCLUDE.findall(f.read_text(errors="replace")):
                    target = resolve(rel, name)
                    if target is None:
                        crossings.append(f"{rel}: includes \"{name}\", which is not in the tree")
                        continue
                    to = layer_of(target)
                    if to is not None and not allowed(frm, to):
                        crossings.append(f"{rel}: includes {target} ({frm} -> {to})")
    for c in crossings:
        print("check-layers:", c)
    if crossings:
        print(f"check-layers: {len(crossings)} include(s) or call(s) cross the layers the wrong "
              "way (docs/architecture.md, 'Layers')")
        return 1
    print("check-layers: no include" + (" or call" if OBJECTS else "") +
          " crosses the layers the wrong way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
