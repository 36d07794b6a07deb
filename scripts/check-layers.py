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
Usage: scripts/check-layers.py [ROOT]   (exit 1 and one line per crossing when it finds any)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
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


def main():
    crossings = []
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
        print(f"check-layers: {len(crossings)} include(s) cross the layers the wrong way "
              "(docs/architecture.md, 'Layers')")
        return 1
    print("check-layers: no include crosses the layers the wrong way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
