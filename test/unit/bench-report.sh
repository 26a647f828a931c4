#!/bin/sh
# bench/report.py's plot data (bench/plotdata.py): whatever order results.csv
# has its rows in, and with sizes as text, each series of a plot is one line
# (its .dat file has its points in increasing size, one per size), every
# size has a labelled tic, and the x range reaches past the first and the
# last size, so that no end's label falls on the border. The data, not
# the pixels: gnuplot need not be installed.
# Run by `make check` (srcdir: the source tree).
set -u

SRC=${srcdir:-.}
TMP=$(mktemp -d /tmp/rpfs-bench-report-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT INT TERM

exec python3 - "$SRC/bench" "$TMP" <<'EOF'
import os
import random
import re
import subprocess
import sys

bench, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, bench)
from plotdata import series_points  # noqa: E402

failed = 0


def check(what, ok, detail=""):
    global failed
    print("%s %s%s" % ("ok  " if ok else "FAIL", what, "" if ok else ": " + detail))
    failed += not ok


# ---- the function -----------------------------------------------------------
got = series_points([("1048576", "5"), ("16384", "2"), ("4096", "1"), ("16384", "4"),
                     ("65536", "3"), ("262144", "")])
check("series_points: text sizes in size order, one point a size (median of repeats)",
      got == [(4096, 1.0), (16384, 3.0), (65536, 3.0), (1048576, 5.0)], repr(got))

# ---- report.py end to end ---------------------------------------------------
sizes = [4096, 16384, 65536, 262144, 1048576, 4194304, 16777216]
osizes = [1 << 20, 16 << 20, 64 << 20]
rows = []
for sysname in ("rpfs", "ufs"):
    for np_ in (1, 2):
        for op in ("write", "read"):
            for s in sizes:
                rows.append("bw,%s,%s,shared;contig;indep;np=%d;size=%d,%d,MB/s"
                            % (sysname, op, np_, s, s // 1000 + np_))
        for op in ("write", "read"):
            for s in osizes:
                rows.append("overlap,%s,%s,size=%d;np=%d,%d,pct" % (sysname, op, s, np_, 50))
for op in ("write", "read"):
    for s in sizes:
        rows.append("raw,raw,%s,size=%d,%d,MB/s" % (op, s, s // 500))
random.Random(7).shuffle(rows)
with open(os.path.join(out, "results.csv"), "w") as f:
    f.write("experiment,system,op,param,value,unit\n" + "\n".join(rows) + "\n")
run = subprocess.run([sys.executable, os.path.join(bench, "report.py"), out],
                     capture_output=True, text=True)
check("report.py runs on rows out of size order", run.returncode == 0, run.stderr)

plots = os.path.join(out, "plots")
for name, want in (("bw-write-shared-contig-indep", sizes), ("bw-read-shared-contig-indep", sizes),
                   ("overlap-np1", osizes), ("overlap-np2", osizes)):
    dats = sorted(f for f in os.listdir(plots) if f.startswith(name + ".") and f.endswith(".dat"))
    check("%s: a .dat file per series" % name, len(dats) >= 4, repr(dats))
    for dat in dats:
        xs = [float(line.split()[0]) for line in open(os.path.join(plots, dat)) if line.strip()]
        check("%s: sizes increasing, each once" % dat,
              xs == sorted(set(xs)) and xs == [float(s) for s in want], repr(xs))
    gp = open(os.path.join(plots, name + ".gp")).read()
    tics = re.search(r"^set xtics \((.*)\)$", gp, re.M)
    ticx = sorted(float(x) for x in re.findall(r'"[^"]*" ([0-9.e+]+)', tics.group(1))) if tics else []
    check("%s: a labelled tic at every size" % name, ticx == [float(s) for s in want], repr(ticx))
    rng = re.search(r"^set xrange \[([0-9.e+]+):([0-9.e+]+)\]$", gp, re.M)
    check("%s: the x range reaches past the first and last size" % name,
          rng is not None and float(rng.group(1)) < min(want) and float(rng.group(2)) > max(want),
          rng.group(0) if rng else "no set xrange")
sys.exit(1 if failed else 0)
EOF
