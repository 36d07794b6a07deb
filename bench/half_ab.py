#!/usr/bin/python3
"""A/B of bench/half_bench.py between two builds (say the one before a change and after):

    /usr/bin/python3 bench/half_ab.py build-base,build [--rounds 4] -- --threads 2 --repeat 15

Runs half_bench.py once per build per round, alternating builds (each process imports its
build's python/ folder), keeps each cell's min over the rounds and prints both builds' half/f32
ratios and new/old (second build / first) for f16 and bf16. The arguments after -- go to
half_bench.py. A benchmark, not a test; run it under nice -n -15 on a shared machine.
"""

import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DTYPES = ("f32", "f16", "bf16")


def run_once(build, extra):
    """{op: {dtype: ms}} from one half_bench.py run against build/python."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, build, "python"))
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "half_bench.py"), *extra],
                         env=env, capture_output=True, text=True, check=True).stdout.splitlines()
    rows = {}
    for line in out[2:]:
        name, vals = line[:32].strip(), line[32:].split()
        rows[name] = dict(zip(DTYPES, map(float, vals[:3])))
    return out[0], rows


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", help="two build folders, comma separated: old,new")
    ap.add_argument("--rounds", type=int, default=4)
    a = ap.parse_args(argv)
    old, new = a.builds.split(",")
    best = {}
    for _ in range(a.rounds):
        for b in (old, new):
            head, rows = run_once(b, extra)
            for name, t in rows.items():
                cell = best.setdefault((b, name), dict(t))
                for d in DTYPES:
                    cell[d] = min(cell[d], t[d])
    print(f"{head}; min over {a.rounds} alternating runs of {old} (old) and {new} (new)")
    print(f"{'op':32s} {'old f16/f32':>11s} {'new f16/f32':>11s} {'old bf16/f32':>12s} "
          f"{'new bf16/f32':>12s} {'f16 new/old':>11s} {'bf16 new/old':>12s}  new ms f32/f16/bf16")
    for (b, name), t in best.items():
        if b != old:
            continue
        n = best[(new, name)]
        print(f"{name:32s} {t['f16'] / t['f32']:11.2f} {n['f16'] / n['f32']:11.2f} "
              f"{t['bf16'] / t['f32']:12.2f} {n['bf16'] / n['f32']:12.2f} "
              f"{n['f16'] / t['f16']:11.2f} {n['bf16'] / t['bf16']:12.2f}  "
              f"{n['f32']:.2f}/{n['f16']:.2f}/{n['bf16']:.2f}")


if __name__ == "__main__":
    main()
