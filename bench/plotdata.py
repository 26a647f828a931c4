"""plotdata.py: the points and axes report.py's plots draw, from results rows.

A series is one line: its points in increasing x, one point per x, x and y
as numbers. Results rows carry them as text ("65536"), and text sorts
"1048576" before "16384", which drew each series as a line running back
and forth across sizes. Every x a series has gets a labelled tic, and the
x range reaches a little past the first and last point, so that neither
end's label falls on the border, where gnuplot drops it. Standard library
only; report.py imports it, test/unit/bench-report.sh tests it.
"""
import statistics


def number(v):
    """'65536' -> 65536, '2.5' -> 2.5 (an int where the value is whole)"""
    f = float(v)
    return int(f) if f.is_integer() else f


def series_points(pts):
    """[(x, y)] of any order, as text or numbers -> [(x, y)] sorted by x,
    one per x: a size measured more than once gets the median of its
    values (rows of one run do not repeat; merged runs may)."""
    by_x = {}
    for x, y in pts:
        if y is None or y == "":
            continue
        by_x.setdefault(number(x), []).append(float(y))
    return [(x, statistics.median(ys)) for x, ys in sorted(by_x.items())]


def x_values(series):
    """every x of any series (each [(x, y)]), sorted, once"""
    return sorted({number(x) for pts in series for x, _ in pts})


def x_range(xs, logx):
    """(lo, hi) a little wider than xs: a fifth of a factor 2 on a log
    axis, 5% of the span on a linear one (a single x gets room too)."""
    lo, hi = min(xs), max(xs)
    if logx:
        return lo / 2 ** 0.2, hi * 2 ** 0.2
    pad = (hi - lo) * 0.05 or max(abs(lo) * 0.05, 1)
    return lo - pad, hi + pad
