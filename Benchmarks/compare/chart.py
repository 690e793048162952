#!/usr/bin/env python3
"""Write an SVG chart of ns per op against document size (W1.random.N).

    python chart.py results/latest.jsonl results/cost-per-op.svg

Both axes are logarithmic (x: 1k..1M items; y: decades spanning the data).
Missing points are skipped; a point from a run stopped by the time budget is
drawn hollow (it is a lower bound).  Plain hand-written SVG, no dependencies.
"""
import math
import sys

from table import load  # same JSON-lines reader as the table

SIZES = [1_000, 10_000, 100_000, 1_000_000]
SERIES = [("listsync", "ListSync", "#d62728"), ("loro-list", "Loro list", "#1f77b4"),
          ("loro-movable", "Loro movable", "#17becf"), ("yrs", "Yrs", "#2ca02c")]
W, H = 720, 440
L, R, T, B = 80, 170, 40, 60  # margins: plot area is [L, W-R] x [T, H-B]


def points(res, engine):
    pts = []
    for n in SIZES:
        r = res.get((engine, f"W1.random.{n}"))
        v = ((r or {}).get("metrics") or {}).get("ns_per_op")
        if isinstance(v, (int, float)) and v > 0:
            pts.append((n, v, bool(r["metrics"].get("lower_bound")) or not r.get("ok")))
    return pts


def svg(res):
    data = {e: points(res, e) for e, _, _ in SERIES}
    ys = [v for pts in data.values() for _, v, _ in pts] or [1, 1000]
    y0 = 10 ** math.floor(math.log10(min(ys)))
    y1 = 10 ** math.ceil(math.log10(max(ys)))
    if y1 <= y0:
        y1 = y0 * 10
    x0, x1 = SIZES[0], SIZES[-1]

    def X(n):
        return L + (math.log10(n) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * (W - L - R)

    def Y(v):
        return H - B - (math.log10(v) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2 - R / 2}" y="22" text-anchor="middle" font-size="15">'
           'W1.random: ns per op against document size</text>']
    # grid and axis labels
    for n in SIZES:
        out.append(f'<line x1="{X(n):.1f}" y1="{T}" x2="{X(n):.1f}" y2="{H - B}" stroke="#ddd"/>')
        label = f"{n // 1000}k" if n < 1_000_000 else "1M"
        out.append(f'<text x="{X(n):.1f}" y="{H - B + 18}" text-anchor="middle">{label}</text>')
    d = y0
    while d <= y1 * 1.0001:
        out.append(f'<line x1="{L}" y1="{Y(d):.1f}" x2="{W - R}" y2="{Y(d):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 8}" y="{Y(d) + 4:.1f}" text-anchor="end">{d:,.0f}</text>')
        d *= 10
    out.append(f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#333"/>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 18}" text-anchor="middle">'
               'items in the list (log scale)</text>')
    out.append(f'<text transform="translate(20 {(T + H - B) / 2}) rotate(-90)" text-anchor="middle">'
               'ns per op (log scale)</text>')
    # series
    for i, (engine, name, color) in enumerate(SERIES):
        pts = data[engine]
        if len(pts) > 1:
            path = " ".join(f"{X(n):.1f},{Y(v):.1f}" for n, v, _ in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for n, v, partial in pts:
            fill = "white" if partial else color
            out.append(f'<circle cx="{X(n):.1f}" cy="{Y(v):.1f}" r="4" fill="{fill}" stroke="{color}" '
                       f'stroke-width="2"><title>{name} {n:,}: {v:,.0f} ns/op</title></circle>')
        ly = T + 10 + i * 22
        out.append(f'<line x1="{W - R + 15}" y1="{ly}" x2="{W - R + 40}" y2="{ly}" stroke="{color}" '
                   'stroke-width="2"/>')
        suffix = "" if pts else " (no data)"
        out.append(f'<text x="{W - R + 46}" y="{ly + 4}">{name}{suffix}</text>')
    out.append(f'<text x="{W - R + 15}" y="{T + 10 + len(SERIES) * 22 + 10}" font-size="10" fill="#555">'
               'hollow = lower bound</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: chart.py RESULTS.jsonl OUT.svg")
    with open(sys.argv[2], "w") as f:
        f.write(svg(load(sys.argv[1])))


if __name__ == "__main__":
    main()
