#!/usr/bin/python3
"""Charts of a `python3 -m lumen.bench --json` run: lumen, its peers and the machine's floor.

    /usr/bin/python3 bench/charts.py BENCH.json [--out DIR] [--machine NAME]

Writes DIR/bench-NAME.png and DIR/bench-NAME.svg (DIR defaults to docs/), one figure of three
panels, four when the run has photo cases:
  filter cases   ms per call (min of the warm calls) of lumen, cv2, SciPy, torch and the case's
                 floor (`lumen bench floors`: memcpy x passes, taps at the FMA peak, or one
                 FFTW r2c+c2r pair), log scale; a missing bar is a peer not run or skipped
  lumen / floor  how far each case is from the machine's limit (1 = at the floor), log scale,
                 with the issue 17 target of the case as a tick where it has one
  conv layers    GFLOP/s of lumen and torch (oneDNN) per layer, and the FMA peak as a line
  photo cases    issue 30's u8/u16 RGB cases: ms per call of lumen into out= and fresh, cv2
                 dst= and fresh, Pillow, torch and the case's memory floor, log scale (their
                 lumen / floor joins the second panel)
NAME defaults to the CPU's name and usable cores from the JSON (e.g. amd-epyc-2c); `make bench`
passes BENCH_MACHINE when set. The title names the machine, the threads and the run's date.
Needs matplotlib (Debian: python3-matplotlib, in scripts/install-deps.sh's bench list).
"""

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: Bar colours: lumen stands out, the peers are muted, the floor is grey.
SERIES = [("lumen", "#d95f02"), ("cv2", "#7570b3"), ("scipy", "#66a61e"),
          ("torch", "#1b9e77"), ("floor", "#999999")]


def machine_slug(machine):
    """'amd-epyc-2c' from {"cpu": "AMD EPYC", "cpus_usable": 2}: a file-name-safe name."""
    cpu = re.sub(r"\((r|tm)\)|cpu|processor|@.*$", "", machine.get("cpu", "cpu"), flags=re.I)
    slug = re.sub(r"[^a-z0-9]+", "-", cpu.lower()).strip("-") or "cpu"
    return f"{slug}-{machine.get('cpus_usable', '?')}c"


def peer_ms(row, lib):
    r = row.get("peers", {}).get(lib) or {}
    return r.get("ms_min") if r.get("status") == "ok" else None


def filter_series(rows):
    """{series: [ms or None per row]} for the filter panel."""
    out = {name: [] for name, _ in SERIES}
    for row in rows:
        lu = row.get("lumen", {})
        out["lumen"].append(lu.get("ms_min") if lu.get("status") == "ok" else None)
        for lib in ("cv2", "scipy", "torch"):
            out[lib].append(peer_ms(row, lib))
        out["floor"].append((row.get("floor") or {}).get("ms"))
    return out


def log_if_wide(ax, values, axis="x"):
    """Log scale when the values span more than 20x (they always do for the filter cases)."""
    vals = [v for v in values if v]
    if vals and max(vals) / min(vals) > 20:
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log")


def draw_filters(ax, rows):
    names = [r["name"] for r in rows]
    series = filter_series(rows)
    present = [(n, c) for n, c in SERIES if any(v is not None for v in series[n])]
    h = 0.8 / max(1, len(present))
    for i, (name, colour) in enumerate(present):
        ys = [j - 0.4 + h * (i + 0.5) for j in range(len(rows))]
        vals = series[name]
        ax.barh([y for y, v in zip(ys, vals) if v], [v for v in vals if v], height=h,
                color=colour, label="floor (lumen bench floors)" if name == "floor" else name,
                hatch="//" if name == "floor" else None, edgecolor="white", linewidth=0.3)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(names)
    ax.invert_yaxis()
    log_if_wide(ax, [v for n, _ in present for v in series[n]])
    ax.set_xlabel("ms per call (min of warm calls; lower is faster)")
    ax.set_title("filter cases: lumen, peers and the machine's floor")
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.06), ncol=len(present), fontsize=8)


#: The photo panel's bars: (label, where in the row, colour).
PHOTO_SERIES = [("lumen out=", ("lumen", "out"), "#d95f02"),
                ("lumen fresh", ("lumen", "fresh"), "#fdb462"),
                ("cv2 dst=", ("cv2", "out"), "#7570b3"),
                ("cv2 fresh", ("cv2", "fresh"), "#bebada"),
                ("Pillow", ("pillow", "fresh"), "#e7298a"),
                ("torch", ("torch", "fresh"), "#1b9e77")]


def photo_ms(row, lib, variant):
    side = row.get("lumen", {}) if lib == "lumen" else row.get("peers", {}).get(lib) or {}
    r = side.get(variant) or {}
    return r.get("ms_min") if r.get("status") == "ok" else None


def draw_photo(ax, rows):
    """Issue 30's photo cases: every variant's ms and the memory floor, case by case."""
    series = [(label, [photo_ms(r, *where) for r in rows], colour)
              for label, where, colour in PHOTO_SERIES]
    series.append(("memory floor", [(r.get("floor") or {}).get("ms") for r in rows], "#999999"))
    series = [s for s in series if any(v is not None for v in s[1])]
    w = 0.8 / max(1, len(series))
    for i, (label, vals, colour) in enumerate(series):
        xs = [j - 0.4 + w * (i + 0.5) for j in range(len(rows))]
        ax.bar([x for x, v in zip(xs, vals) if v], [v for v in vals if v], width=w,
               color=colour, label=label, hatch="//" if label == "memory floor" else None,
               edgecolor="white", linewidth=0.3)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["name"].replace("photo_", "") for r in rows], rotation=60,
                       ha="right", fontsize=7)
    log_if_wide(ax, [v for _, vals, _ in series for v in vals], axis="y")
    ax.set_ylabel("ms per call (min; lower is faster)")
    ax.set_title("photo cases (issue 30): u8 / u16 interleaved RGB, border reflect101; lumen and "
                 "cv2 into a preallocated output and fresh, Pillow and torch fresh", fontsize=10)
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", ncol=len(series))


def draw_ratios(ax, rows):
    rows = [r for r in rows if (r.get("floor") or {}).get("ratio")]
    if not rows:
        ax.text(0.5, 0.5, "no floors in this run\n(lumen bench floors not run)",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    names = [r["name"] for r in rows]
    ratios = [r["floor"]["ratio"] for r in rows]
    colours = {"memory": "#386cb0", "fma": "#f0027f", "fft": "#bf5b17"}
    ax.barh(range(len(rows)), ratios, color=[colours.get(r["floor"]["bound"], "#666")
                                             for r in rows])
    for j, r in enumerate(rows):
        if r["floor"].get("limit"):
            ax.plot([r["floor"]["limit"]] * 2, [j - 0.4, j + 0.4], color="black", lw=1.5)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(names, fontsize=8 if len(rows) <= 20 else 6)
    ax.invert_yaxis()
    if max(ratios) / min(ratios) > 20 or max(ratios) > 20:
        ax.set_xscale("log")
    handles = [ax.bar([0], [0], color=c, label=f"bound: {b}") for b, c in colours.items()]
    handles.append(ax.plot([], [], color="black", lw=1.5, label="target (issue 17, 30)")[0])
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2),
              ncol=len(handles))
    ax.set_xlabel("lumen min / floor (1 = at the machine's limit)")
    ax.set_title("how far from the floor")
    ax.grid(axis="x", which="both", alpha=0.3)


def draw_conv(ax, conv_rows, peak):
    rows = [r for r in conv_rows if r.get("lumen", {}).get("status") == "ok"]
    if not rows:
        ax.text(0.5, 0.5, "no conv cases in this run", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_axis_off()
        return
    x = range(len(rows))
    lumen_g = [r["lumen"]["gflops"] for r in rows]
    torch_g = [(r.get("torch") or {}).get("gflops") for r in rows]
    ax.bar([i - 0.2 for i in x], lumen_g, width=0.4, color=SERIES[0][1], label="lumen")
    ax.bar([i + 0.2 for i, t in zip(x, torch_g) if t], [t for t in torch_g if t], width=0.4,
           color=SERIES[3][1], label="torch (oneDNN)")
    if peak:
        ax.axhline(peak, color="#999999", ls="--", lw=1, label=f"FMA peak {peak:.0f}")
    ax.set_xticks(list(x))
    ax.set_xticklabels(["_".join(r["name"].split("_")[:2]) for r in rows], rotation=30,
                       ha="right", fontsize=7)
    log_if_wide(ax, lumen_g + [t for t in torch_g if t] + ([peak] if peak else []), axis="y")
    ax.set_ylabel("GFLOP/s (higher is faster)")
    ax.set_title("conv2d layers: GFLOP/s\n(direct-conv flops / time: Winograd does fewer, so "
                 "it can pass the peak)", fontsize=10)
    ax.grid(axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=3)


def title(data, machine_name):
    m = data.get("machine", {})
    v = m.get("versions", {})
    threads = m.get("threads", {}).get("lumen", "?")
    w, h = data.get("size", ["?", "?"])
    date = m.get("date", "date unknown")
    peers = ", ".join(f"{k} {v[k]}" for k in ("cv2", "scipy", "torch") if k in v)
    photo = ""
    if data.get("photo_rows"):
        pw, ph = data.get("photo_size", ["?", "?"])
        photo = f", photo cases {pw}x{ph} RGB"
        if "pillow" in v:
            peers += f", Pillow {v['pillow']}"
    return (f"lumen {v.get('lumen', '?')} vs {peers or 'no peers'} on {machine_name} "
            f"({m.get('cpu', '?')}, {threads} threads), {w}x{h} f32{photo}, {date}")


def draw(data, machine_name):
    """The figure of a bench JSON object."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = data.get("rows", [])
    conv_rows = data.get("conv_rows", [])
    photo_rows = data.get("photo_rows", [])
    peak = (data.get("floors") or {}).get("fma", {}).get("gflops")
    height = max(8, 0.45 * len(rows) + 3)
    if photo_rows and not rows and not conv_rows:  # --case photo...: the photo panels alone
        fig = plt.figure(figsize=(16, 14))
        grid = fig.add_gridspec(2, 1, height_ratios=[1.3, 1], hspace=0.45)
        draw_photo(fig.add_subplot(grid[0]), photo_rows)
        draw_ratios(fig.add_subplot(grid[1]), photo_rows)
        fig.suptitle(title(data, machine_name), fontsize=11)
        return fig
    if photo_rows:
        fig = plt.figure(figsize=(16, height + 7))
        grid = fig.add_gridspec(3, 2, width_ratios=[1.5, 1], height_ratios=[1, 1, 1.1],
                                hspace=0.6, wspace=0.35)
        draw_photo(fig.add_subplot(grid[2, :]), photo_rows)
    else:
        fig = plt.figure(figsize=(16, height))
        grid = fig.add_gridspec(2, 2, width_ratios=[1.5, 1], hspace=0.5, wspace=0.35)
    draw_filters(fig.add_subplot(grid[0:2, 0]), rows)
    draw_ratios(fig.add_subplot(grid[0, 1]), rows + photo_rows)
    draw_conv(fig.add_subplot(grid[1, 1]), conv_rows, peak)
    fig.suptitle(title(data, machine_name), fontsize=11)
    return fig


def write(data, out_dir, machine_name):
    """Writes bench-<name>.png and .svg into out_dir; returns their paths."""
    fig = draw(data, machine_name)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"bench-{machine_name}.{ext}" for ext in ("png", "svg")]
    fig.savefig(paths[0], dpi=110, bbox_inches="tight", metadata={"Software": None})
    # no date in the SVG: regenerating the same data gives the same file
    fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None})
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", type=Path, help="output of python3 -m lumen.bench --json")
    ap.add_argument("--out", type=Path, default=REPO / "docs", help="folder (default docs/)")
    ap.add_argument("--machine", default="", help="the machine's name in the file names "
                    "(default: from the JSON's CPU and cores)")
    args = ap.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        sys.exit("bench/charts.py: matplotlib is missing (Debian: apt-get install "
                 "python3-matplotlib, or scripts/install-deps.sh bench)")
    data = json.loads(args.json.read_text())
    name = args.machine or machine_slug(data.get("machine", {}))
    if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
        ap.error(f"--machine: letters, digits, '.', '_' and '-' only, got {name!r}")
    for p in write(data, args.out, name):
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
