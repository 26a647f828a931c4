#!/usr/bin/env python3
"""report.py: results.md and gnuplot scripts from a bench/run results folder.

Usage: report.py DIR   (DIR holds results.csv and machine.md; writes
DIR/results.md and DIR/plots/*.gp + *.dat, whose PNGs land in DIR)

Every ratio is computed from figures of the same run: rpfs/ufs between
rpfs: and ufs: through the same MPICH, rpfs/raw against libfabric's
fi_write (writes) or fi_read (reads) of the same transfer size between two
processes (rpfs-xport-bench). Standard library only.
"""
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plotdata import series_points, x_range, x_values  # noqa: E402

OUT = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(OUT, "results.csv"))))
md = []


def params(p):
    """'shared;contig;np=2;size=4096' -> ({'np': '2', ...}, ['shared', ...])"""
    kv, flags = {}, []
    for part in p.split(";"):
        if "=" in part:
            k, v = part.split("=", 1)
            kv[k] = v
        elif part:
            flags.append(part)
    return kv, flags


def sel(exp, unit=None, **match):
    """rows of experiment exp whose params (or system/op) match"""
    out = []
    for r in rows:
        if r["experiment"] != exp or (unit and r["unit"] != unit):
            continue
        kv, flags = params(r["param"])
        ok = True
        for k, v in match.items():
            if k in ("system", "op"):
                ok = ok and r[k] == v
            elif k == "flags":
                ok = ok and flags == v
            else:
                ok = ok and kv.get(k) == str(v)
        if ok:
            out.append((r, kv, flags))
    return out


def val(exp, unit=None, **match):
    got = sel(exp, unit, **match)
    return float(got[0][0]["value"]) if got else None


def fmt(v, digits=1):
    if v is None:
        return "-"
    if abs(v) >= 100:
        return "%.0f" % v
    return ("%." + str(digits) + "f") % v


def ratio(a, b):
    return "%.2f" % (a / b) if a is not None and b and b > 0 else "-"


def size_name(n):
    n = int(n)
    for unit, s in (("M", 1 << 20), ("K", 1 << 10)):
        if n >= s and n % s == 0:
            return "%d %siB" % (n // s, unit)
    return "%d B" % n


def table(head, body):
    md.append("| " + " | ".join(head) + " |")
    md.append("|" + "---|" * len(head))
    for b in body:
        md.append("| " + " | ".join(b) + " |")
    md.append("")


def sizes_of(exp, **m):
    return sorted({int(kv["size"]) for _, kv, _ in sel(exp, **m) if "size" in kv})


def raw(op, size):
    return val("raw", "MB/s", system="raw", op=op, size=size)


# ---- gnuplot ---------------------------------------------------------------
PLOTS = os.path.join(OUT, "plots")
os.makedirs(PLOTS, exist_ok=True)


def plot(name, title, xlabel, ylabel, series, logx=True, logy=False, xtics=None):
    """series: [(label, [(x, y)...], dashed)], x and y numbers or text;
    xtics: a function naming an x, for a labelled tic at every x of every
    series. Writes NAME.gp and one NAME.N.dat a series: one line each,
    its points in x order, one per x (plotdata.py)."""
    series = [(label, series_points(pts), dashed) for label, pts, dashed in series]
    series = [s for s in series if s[1]]
    if not series:
        return
    xs = x_values([pts for _, pts, _ in series])
    cmds = []
    for i, (label, pts, dashed) in enumerate(series):
        dat = "%s.%d.dat" % (name, i)
        with open(os.path.join(PLOTS, dat), "w") as f:
            for x, y in pts:
                f.write("%s %s\n" % (x, y))
        cmds.append("'%s' using 1:2 with linespoints lw 2 %s title '%s'"
                    % (dat, "dt 2" if dashed else "dt 1", label.replace("'", "")))
    with open(os.path.join(PLOTS, name + ".gp"), "w") as f:
        f.write("set terminal pngcairo size 900,560 noenhanced\n"
                if os.system("gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1") == 0
                else "set terminal png size 900,560 noenhanced\n")
        f.write("set output '../%s.png'\n" % name)
        f.write("set title '%s'\nset xlabel '%s'\nset ylabel '%s'\n" % (title, xlabel, ylabel))
        f.write("set grid\nset key outside right\n")
        if logx:
            f.write("set logscale x 2\n")
        if logy:
            f.write("set logscale y 10\n")
        f.write("set xrange [%r:%r]\n" % x_range(xs, logx))
        if xtics:
            f.write("set xtics (%s)\n" % ", ".join('"%s" %s' % (xtics(x), x) for x in xs))
        f.write("plot " + ", \\\n     ".join(cmds) + "\n")


def size_tic(size):
    """65536 -> '64K'"""
    return size_name(size).replace(" ", "").replace("iB", "")


# ---- header ------------------------------------------------------------------
machine = open(os.path.join(OUT, "machine.md")).read() if os.path.exists(
    os.path.join(OUT, "machine.md")) else ""
md.append("# rpfs benchmark results (bench/run)")
md.append("")
md.append("rpfs = `rpfs:` through MPICH and ad_rpfs (4 rpfsd on loopback, storage on "
          "tmpfs); ufs = ROMIO `ufs:` on /dev/shm through the same MPICH; raw = "
          "libfabric fi_write / fi_read between two processes (rpfs-xport-bench). "
          "MB/s = 1e6 bytes/s. Ratios compare figures of this run only. The exact "
          "commands are in commands.txt, the machine in machine.md.")
md.append("")
md.append(machine.replace("# Machine", "## Machine"))
md.append("")

# ---- targets (issue 8) -------------------------------------------------------
md.append("## Issue 8's targets, from this run")
md.append("")
tgt = []
f1, f4 = val("open", system="rpfs", op="first_open", np=1), val("open", system="rpfs", op="first_open", np=4)
if f1 is not None:
    tgt.append(["first MPI_File_open, 1 process", "%s ms" % fmt(f1), "<= 10 ms",
                "met" if f1 <= 10 else "not met"])
if f4 is not None:
    tgt.append(["first MPI_File_open, 4 processes", "%s ms" % fmt(f4), "<= 50 ms",
                "met" if f4 <= 50 else "not met"])
for op in ("write", "read"):
    l1 = val("latency", system="rpfs", op=op, np=1, size=4096, flags=["p50"])
    l4 = val("latency", system="rpfs", op=op, np=4, size=4096, flags=["p50"])
    if l1 and l4:
        tgt.append(["4 KiB %s p50, 4 vs 1 process" % op, "%.2fx (%s / %s us)" % (l4 / l1, fmt(l4), fmt(l1)),
                    "<= 3x", "met" if l4 / l1 <= 3 else "not met"])
big = max(sizes_of("bw", system="rpfs") or [0])
big = 4 << 20 if (4 << 20) in sizes_of("bw", system="rpfs") else big
for layout in ("shared", "fpp"):
    for op in ("write", "read"):
        v = val("bw", system="rpfs", op=op, np=4, size=big, flags=[layout, "contig", "indep"])
        r = raw(op, big)
        if v and r:
            tgt.append(["%s %s %s, 4 processes vs raw" % (size_name(big), layout, op),
                        "%.0f%% (%s / %s MB/s)" % (100 * v / r, fmt(v), fmt(r)), ">= 70%",
                        "met" if v / r >= 0.7 else "not met"])
for op in ("write", "read"):
    s = val("bw", system="rpfs", op=op, np=4, size=big, flags=["shared", "strided", "indep"])
    c = val("bw", system="rpfs", op=op, np=4, size=big, flags=["shared", "contig", "indep"])
    if s and c:
        tgt.append(["strided vs contiguous %s %s, 4 processes" % (size_name(big), op),
                    "%.0f%%" % (100 * s / c), ">= 70%", "met" if s / c >= 0.7 else "not met"])
for op in ("write", "read"):
    lst = val("tile", system="rpfs", op=op, mode="list", np=4)
    pcs = val("tile", system="rpfs", op=op, mode="pieces", np=4)
    if lst and pcs:
        tgt.append(["tile I/O %s, list vs per piece, 4 processes" % op, "%.2fx" % (lst / pcs), ">= 3x",
                    "met" if lst / pcs >= 3 else "not met"])
    col = val("tile", system="rpfs", op=op, mode="coll", np=2)
    lst2 = val("tile", system="rpfs", op=op, mode="list", np=2)
    if col and lst2:
        tgt.append(["tile I/O %s, collective vs independent list, 2 processes" % op,
                    "%.2fx" % (col / lst2), ">= 1x", "met" if col >= lst2 else "not met"])
for op in ("write", "read"):
    # the transport's client process against raw fi_write/fi_read's, per GiB
    # of their bandwidth runs (rpfs-xport-bench), the worst size >= 1 MiB
    worst = None
    for s in sizes_of("raw", system="raw"):
        c_raw = val("raw", "s/GiB", system="raw", op=op, size=s)
        c_auto = val("raw", "s/GiB", system="xport", op=op, size=s, path="auto")
        if s >= 1 << 20 and c_raw and c_auto is not None and (
                worst is None or c_auto / c_raw > worst[0]):
            worst = (c_auto / c_raw, s, c_auto, c_raw)
    if worst:
        tgt.append(["client CPU per GiB, %s, transport vs raw (worst size >= 1 MiB)" % op,
                    "%.2fx at %s (%.3f / %.3f s)" % (worst[0], size_name(worst[1]), worst[2], worst[3]),
                    "<= 1.2x", "met" if worst[0] <= 1.2 else "not met"])
table(["target", "this run", "wanted", ""], tgt)
md.append("Client CPU: the client process's CPU time (all threads) over the "
          "bandwidth runs of rpfs-xport-bench, per GiB; raw fi_write/fi_read poll "
          "their completion queue, rpfs's client sleeps in it.")
md.append("")

# ---- bandwidth ---------------------------------------------------------------
md.append("## Bandwidth vs transfer size (MPI-IO)")
md.append("")
md.append("Each process writes COUNT transfers of SIZE bytes, then reads them back "
          "(every byte checked); the bytes of all processes over the slowest "
          "process's time, median of the repetitions. shared: one file, the "
          "processes' transfers interleaved; fpp: a file per process. contig: "
          "the default view; strided: a file view whose filetype is a vector of "
          "16 pieces per transfer (and holes). indep: write_at/read_at; coll: "
          "write_at_all/read_at_all.")
md.append("")
combos = []
for layout in ("shared", "fpp"):
    for pattern in ("contig", "strided"):
        for mode in ("indep", "coll"):
            combos.append((layout, pattern, mode))
nps = sorted({int(kv["np"]) for _, kv, _ in sel("bw") if "np" in kv})
for layout, pattern, mode in combos:
    flags = [layout, pattern, mode]
    body = []
    for np_ in nps:
        for s in sizes_of("bw", system="rpfs", np=np_, flags=flags):
            line = [str(np_), size_name(s)]
            for op in ("write", "read"):
                a = val("bw", system="rpfs", op=op, np=np_, size=s, flags=flags)
                b = val("bw", system="ufs", op=op, np=np_, size=s, flags=flags)
                r = raw(op, s)
                line += [fmt(a), fmt(b), fmt(r), ratio(a, b), ratio(a, r)]
            body.append(line)
    if not body:
        continue
    md.append("### %s, %s, %s" % ("shared file" if layout == "shared" else "file per process",
                                         "contiguous" if pattern == "contig" else "strided (file view)",
                                         "independent" if mode == "indep" else "collective"))
    md.append("")
    table(["np", "size", "write rpfs", "ufs", "raw", "rpfs/ufs", "rpfs/raw",
           "read rpfs", "ufs", "raw", "rpfs/ufs", "rpfs/raw"], body)
    for op in ("write", "read"):
        series = []
        for sysname in ("rpfs", "ufs"):
            for np_ in nps:
                pts = [(kv["size"], r["value"]) for r, kv, _ in
                       sel("bw", "MB/s", system=sysname, op=op, np=np_, flags=flags)]
                series.append(("%s np=%d" % (sysname, np_), pts, sysname == "ufs"))
        rs = sizes_of("bw", system="rpfs", flags=flags)
        series.append(("raw fi_%s" % op, [(s, raw(op, s)) for s in rs if raw(op, s)], False))
        plot("bw-%s-%s-%s-%s" % (op, layout, pattern, mode),
             "%s: %s, %s, %s" % (op, layout, pattern, mode), "transfer size", "MB/s",
             series, logy=True, xtics=size_tic)

# ---- open and latency ----------------------------------------------------------
md.append("## First open and per-operation latency")
md.append("")
body = []
for np_ in nps:
    for op in ("first_open", "open"):
        a = val("open", system="rpfs", op=op, np=np_)
        b = val("open", system="ufs", op=op, np=np_)
        body.append([str(np_), op.replace("_", " "), fmt(a, 3), fmt(b, 3), ratio(a, b)])
md.append("The first MPI_File_open of a process (for rpfs it brings up the client "
          "library and the fabric) and a second one: the slowest process, ms.")
md.append("")
table(["np", "open", "rpfs ms", "ufs ms", "rpfs/ufs"], body)
md.append("4 KiB writes then reads at once on every process (shared file, independent), "
          "each timed alone; percentiles over all processes' operations, microseconds. "
          "raw: one fi_write / fi_read of 4 KiB to its completion.")
md.append("")
body = []
for np_ in nps:
    for op in ("write", "read"):
        r4 = val("raw", "us", system="raw", op=op, size=4096)
        for p in ("p50", "p90", "p99", "max"):
            a = val("latency", system="rpfs", op=op, np=np_, size=4096, flags=[p])
            b = val("latency", system="ufs", op=op, np=np_, size=4096, flags=[p])
            if a is None and b is None:
                continue
            body.append([str(np_), op, p, fmt(a), fmt(b), fmt(r4) if p == "p50" else "",
                         ratio(a, b), ratio(a, r4) if p == "p50" else ""])
table(["np", "op", "percentile", "rpfs us", "ufs us", "raw us", "rpfs/ufs", "rpfs/raw"], body)

# ---- transport: path ablation, pipelining -----------------------------------
md.append("## Data path ablation (transport, rpfs-xport-bench)")
md.append("")
md.append("Write (PUT) and read (GET) calls forced onto each path, the automatic "
          "choice, and raw fi_write/fi_read of the same size: MB/s with 8 in "
          "flight, and microseconds of one call at a time.")
md.append("")
psizes = sorted({int(kv["size"]) for _, kv, _ in sel("path")})
paths = ["inline", "fast", "bulk", "auto"]
for op in ("write", "read"):
    body = []
    for s in psizes:
        line = [size_name(s)]
        for p in paths:
            line.append(fmt(val("path", "MB/s", system="xport", op=op, path=p, size=s)))
        line.append(fmt(val("path", "MB/s", system="raw", op=op, size=s)))
        for p in paths:
            line.append(fmt(val("path", "us", system="xport", op=op, path=p, size=s), 2))
        line.append(fmt(val("path", "us", system="raw", op=op, size=s), 2))
        body.append(line)
    md.append("### %s" % op)
    md.append("")
    table(["size"] + ["%s MB/s" % p for p in paths] + ["raw MB/s"] +
          ["%s us" % p for p in paths] + ["raw us"], body)
    series = [(p, [(kv["size"], r["value"]) for r, kv, _ in
                   sel("path", "MB/s", system="xport", op=op, path=p)], False) for p in paths]
    series.append(("raw", [(kv["size"], r["value"]) for r, kv, _ in
                           sel("path", "MB/s", system="raw", op=op)], True))
    plot("path-%s" % op, "%s: forced data paths (transport)" % op, "size", "MB/s",
         series, logy=True, xtics=size_tic)

md.append("## Pipelining (transport, bulk through the server's pipeline)")
md.append("")
md.append("One transfer size, the server moving bulk data through its buffer pool in "
          "chunks of the given size, two in flight (double buffering); off: one "
          "chunk in flight (no overlap of network and storage copy).")
md.append("")
body = []
chunks = []
for r, kv, _ in sel("pipeline", "MB/s", system="xport", path="auto"):
    if kv["chunk"] not in chunks:
        chunks.append(kv["chunk"])
for c in chunks:
    line = [c]
    for op in ("write", "read"):
        got = sel("pipeline", "MB/s", system="xport", op=op, path="auto", chunk=c)
        rw = sel("pipeline", "MB/s", system="raw", op=op, chunk=c)
        a = float(got[0][0]["value"]) if got else None
        b = float(rw[0][0]["value"]) if rw else None
        size = got[0][1]["size"] if got else "?"
        line += [fmt(a), fmt(b), ratio(a, b)]
    body.append([size_name(size) if size != "?" else "?"] + line)
table(["size", "chunk", "write MB/s", "raw", "/raw", "read MB/s", "raw", "/raw"], body)
series = []
for op in ("write", "read"):
    pts = []
    for c in chunks:
        if c == "off":
            continue
        v = val("pipeline", "MB/s", system="xport", op=op, path="auto", chunk=c)
        mult = {"K": 1 << 10, "M": 1 << 20}.get(c[-1], 1)
        if v:
            pts.append((int(c.rstrip("KM")) * mult, v))
    series.append((op, pts, False))
plot("pipeline", "pipelined bulk: chunk size sweep", "chunk size", "MB/s", series,
     xtics=size_tic)

# ---- overlap ---------------------------------------------------------------------
md.append("## Nonblocking I/O overlapping computation")
md.append("")
md.append("MPI_File_iwrite_at / iread_at of one contiguous block a rank, then "
          "computing for as long as the blocking call takes (B) without calling "
          "MPI, then MPI_Wait. Post: time for the call to return. Overlap: "
          "(compute + B - total) / min(compute, B), 100% when the transfer hid "
          "entirely behind the compute. Slowest rank, median of the repetitions "
          "(5; the compute lasts the median blocking time). "
          "Cores busy: the node's busy cores (/proc/stat) during blocking "
          "transfers, servers and every process included: near the number of "
          "cores, the transfer alone fills the node, and a computation holding "
          "a core must slow it. Asleep: the same overlap with a computation that "
          "sleeps instead (1 process): what the engine overlaps when the CPU is "
          "not the bound. Post+wait: the nonblocking call posted and waited for "
          "at once (median), the engine's own transfer time, to set against B.")
md.append("")
body = []
for np_ in sorted({int(kv["np"]) for _, kv, _ in sel("overlap")}):
    for size in sorted({int(kv["size"]) for _, kv, _ in sel("overlap", np=np_)}):
        for op in ("write", "read"):
            line = [str(np_), size_name(size), op]
            for sysname in ("rpfs", "ufs"):
                m = dict(system=sysname, op=op, size=size, np=np_)
                line += [fmt(val("overlap", "ms_blocking", **m)),
                         fmt(val("overlap", "ms_postwait", **m)),
                         fmt(val("overlap", "cores_busy", **m), 2),
                         fmt(val("overlap", "us_post", **m)),
                         fmt(val("overlap", "pct", **m)),
                         fmt(val("overlap", "pct_asleep", **m))]
            body.append(line)
table(["np", "size a rank", "op", "rpfs blocking ms", "post+wait ms", "cores busy",
       "post us", "overlap %", "asleep %", "ufs blocking ms", "post+wait ms", "cores busy",
       "post us", "overlap %", "asleep %"],
      body)
bound = sorted({int(kv["size"]) for r, kv, _ in sel("overlap")
                if r["unit"] == "pct_bound"})
if bound:
    md.append("A rank bound to one core, as a launcher's bind-to-core leaves it "
              "(1 process, `mpiio_overlap --bind`): rpfs's progress thread "
              "inherits the binding and takes turns with the computation on "
              "that core, or, with `RPFS_PROGRESS_CPUS=all` (the `progress_cpus` "
              "setting), runs wherever the scheduler finds room. ufs's aio "
              "threads inherit the binding too.")
    md.append("")
    body = []
    for size in bound:
        for op in ("write", "read"):
            m = dict(op=op, size=size, np=1)
            body.append([size_name(size), op,
                         fmt(val("overlap", "pct", system="rpfs", **m)),
                         fmt(val("overlap", "pct_bound", system="rpfs", **m)),
                         fmt(val("overlap", "pct_bound_all", system="rpfs", **m)),
                         fmt(val("overlap", "pct", system="ufs", **m)),
                         fmt(val("overlap", "pct_bound", system="ufs", **m))])
    table(["size", "op", "rpfs overlap %", "bound %", "bound, progress_cpus=all %",
           "ufs overlap %", "bound %"], body)
for np_ in sorted({int(kv["np"]) for _, kv, _ in sel("overlap")}):
    series = []
    for sysname in ("rpfs", "ufs"):
        for op in ("write", "read"):
            series.append(("%s %s" % (sysname, op),
                           [(int(kv["size"]), r["value"]) for r, kv, _ in
                            sel("overlap", "pct", system=sysname, op=op, np=np_)], False))
    plot("overlap-np%d" % np_, "overlap efficiency, %d processes" % np_, "size a rank",
         "overlap %", series, xtics=size_tic)

# ---- registration cache -------------------------------------------------------
md.append("## Registration cache vs buffer reuse (librpfs, 1 MiB bulk transfers)")
md.append("")
md.append("off: a cache of one region (every operation registers and deregisters); "
          "pindown: the working set stays registered, a new buffer evicts one region "
          "at once; lazy: pin-down plus lazy deregistration in batches (the default). "
          "Buffers not reused are freshly mapped and unmapped after use.")
md.append("")
body = []
for reuse in ("0", "20", "80", "100"):
    line = [reuse + "%"]
    for op in ("write", "read"):
        for pol in ("off", "pindown", "lazy"):
            line.append(fmt(val("rcache", "MB/s", op=op, reuse=reuse, flags=[pol])))
    body.append(line)
table(["reuse", "write off", "pindown", "lazy", "read off", "pindown", "lazy"], body)
for op in ("write", "read"):
    plot("rcache-%s" % op, "%s: registration cache vs buffer reuse" % op, "buffer reuse %",
         "MB/s", [(pol, [(int(kv["reuse"]), r["value"]) for r, kv, _ in
                         sel("rcache", "MB/s", op=op, flags=[pol])], False)
                  for pol in ("off", "pindown", "lazy")], logx=False)

# ---- tile I/O ------------------------------------------------------------------
md.append("## Tile I/O (examples/tile_io.c, mpi-tile-io parameters)")
md.append("")
md.append("list: a subarray view and one independent call (one list request per "
          "server); pieces: one call per contiguous piece; coll: the view with "
          "collective calls. Every read checked.")
md.append("")
body = []
for np_ in sorted({int(kv["np"]) for _, kv, _ in sel("tile")}):
    for m in ("list", "pieces", "coll"):
        line = [str(np_), m]
        for op in ("write", "read"):
            a = val("tile", system="rpfs", op=op, mode=m, np=np_)
            b = val("tile", system="ufs", op=op, mode=m, np=np_)
            line += [fmt(a), fmt(b), ratio(a, b)]
        body.append(line)
    lp = [ratio(val("tile", system="rpfs", op=op, mode="list", np=np_),
                val("tile", system="rpfs", op=op, mode="pieces", np=np_)) for op in ("write", "read")]
    cl = [ratio(val("tile", system="rpfs", op=op, mode="coll", np=np_),
                val("tile", system="rpfs", op=op, mode="list", np=np_)) for op in ("write", "read")]
    body.append([str(np_), "rpfs list/pieces", lp[0], "", "", lp[1], "", ""])
    body.append([str(np_), "rpfs coll/list", cl[0], "", "", cl[1], "", ""])
table(["np", "mode", "write rpfs", "ufs", "rpfs/ufs", "read rpfs", "ufs", "rpfs/ufs"], body)

# ---- scaling ---------------------------------------------------------------------
md.append("## Scaling over I/O servers")
md.append("")
md.append("A shared file striped over 1, 2 or 4 of the 4 I/O servers (hint "
          "striping_factor, checked with MPI_File_get_info), contiguous, "
          "independent.")
md.append("")
body = []
for s in ("1", "2", "4"):
    got = {op: sel("scaling", "MB/s", op=op, servers=s) for op in ("write", "read")}
    if not got["write"]:
        continue
    kv = got["write"][0][1]
    body.append([s, kv.get("np", "?"), size_name(kv["size"]),
                 fmt(float(got["write"][0][0]["value"])),
                 fmt(float(got["read"][0][0]["value"])) if got["read"] else "-"])
table(["I/O servers", "np", "size", "write MB/s", "read MB/s"], body)
plot("scaling", "aggregate bandwidth vs I/O servers", "I/O servers", "MB/s",
     [(op, [(int(kv["servers"]), r["value"]) for r, kv, _ in sel("scaling", "MB/s", op=op)], False)
      for op in ("write", "read")], xtics=str)

# ---- redundancy ------------------------------------------------------------------
md.append("## Redundancy: mirror:2 and ec:2+1 against none")
md.append("")
md.append("4 processes, one shared file, 4 MiB contiguous independent transfers "
          "(hint rpfs_redundancy), rounds interleaved; each figure the median "
          "over rounds. none: 4 data slots on the 4 servers; mirror:2: 2 data "
          "slots, 4 servers; ec:2+1 (the servers' ec_preview): 2 data slots and "
          "a parity slot, 3 servers. A mirrored write is stored and forwarded by "
          "each slot's primary: every byte crosses the network and the disk "
          "twice, on the same cores. An ec write is read (old bytes), stored, "
          "and its delta sent to the parity server, which reads and XORs it in. "
          "Degraded: `rpfs cat` of a mirrored file with one of its servers "
          "killed, against the same with all up.")
md.append("")


def median(v):
    v = sorted(x for x in v if x is not None)
    return v[len(v) // 2] if v else None


def red_mbps(op, red, servers="4"):
    return median([float(r["value"]) for r, kv, _ in sel("redundancy", "MB/s", op=op)
                   if kv.get("redundancy") == red and kv.get("servers", "4") == servers])


body = []
for op in ("write", "read"):
    a, b, e = red_mbps(op, "mirror:2"), red_mbps(op, "none"), red_mbps(op, "ec:2+1")
    if a is not None or b is not None or e is not None:
        body.append([op, fmt(b), fmt(a), ratio(a, b), fmt(e), ratio(e, b)])
table(["", "none MB/s", "mirror:2 MB/s", "mirror/none", "ec:2+1 MB/s", "ec/none"], body)
body = []
for op in ("write", "read"):
    b, e = red_mbps(op, "none", "6"), red_mbps(op, "ec:4+2", "6")
    if b is not None or e is not None:
        body.append([op, fmt(b), fmt(e), ratio(e, b)])
if body:
    md.append("ec:4+2 takes 6 I/O servers: a second cluster of 6 on the same host, "
              "the same 4 processes and transfers, 4 data slots either way "
              "(hint striping_factor=4; ec:4+2 adds 2 parity slots). Its ideal "
              "write ratio is 4/6 = 0.67 (the parity's bytes); each ec write here "
              "also reads its old bytes and sends a delta per parity member.")
    md.append("")
    table(["6 servers", "none MB/s", "ec:4+2 MB/s", "ec/none"], body)
def red_val(op, red):
    """The first figure of op for redundancy red (the degraded rows)."""
    for r, kv, _ in sel("redundancy", "MB/s", op=op):
        if kv.get("redundancy", "mirror:2") == red:
            return float(r["value"])
    return None


h = red_val("read_healthy", "mirror:2")
d = red_val("read_degraded", "mirror:2")
wh = red_val("write_healthy", "mirror:2")
wd = red_val("write_degraded", "mirror:2")
if h is not None or d is not None:
    table(["mirror:2, rpfs cat / cp", "all servers up MB/s", "one server killed MB/s",
           "degraded/healthy"], [["read (cat)", fmt(h), fmt(d), ratio(d, h)],
                                 ["write (cp)", fmt(wh), fmt(wd), ratio(wd, wh)]])
eh = red_val("read_healthy", "ec:2+1")
ed = red_val("read_degraded", "ec:2+1")
ewd = red_val("write_degraded", "ec:2+1")
ers = red_val("resync", "ec:2+1")
if eh is not None or ed is not None:
    md.append("ec:2+1 (a preview): `rpfs cat` with a data member's server killed "
              "(its cells decoded from the other data member and the parity, "
              "under holds; the size from the parity member's record), `rpfs cp` "
              "with the parity member's server killed (marked stale), and that "
              "member re-encoded by its own server once started again (from "
              "`rpfs up` to `rpfs verify` passing, over its parity bytes).")
    md.append("")
    table(["ec:2+1", "all servers up MB/s", "one server killed MB/s", "degraded/healthy"],
          [["read (cat), a data member killed", fmt(eh), fmt(ed), ratio(ed, eh)],
           ["write (cp), the parity member killed", "-", fmt(ewd), "-"],
           ["parity re-encoded after its restart", "-", fmt(ers), "-"]])
rs = red_val("resync", "mirror:2")
if rs is not None:
    md.append(f"Resync of the killed server's stale copy after its restart "
              f"(from `rpfs up` to `rpfs verify` passing; bounded by the metadata "
              f"server's 1 s look at its marks and the 400 MB/s pace): "
              f"{fmt(rs)} MB/s.")
    md.append("")
rb = red_val("rebuild", "mirror:2")
if rb is not None:
    md.append(f"Rebuild of the server's copies after its storage was replaced "
              f"(killed, its data directory emptied, started again; from `rpfs up` "
              f"to `rpfs verify` passing, over the bytes made again on it; bounded "
              f"as the resync, plus the metadata server's walk of its files): "
              f"{fmt(rb)} MB/s.")
    md.append("")

# ---- erasure-code arithmetic (issue 29) -------------------------------------------
ec_ops = ("encode", "delta", "update", "apply", "decode1", "decodeP")
ec_codes = sorted({(int(kv["k"]), int(kv["p"]), int(kv["cell"]))
                   for _, kv, _ in sel("ec_cost", "s/GiB")})
if ec_codes:
    md.append("## Erasure-code arithmetic (ISA-L, one core)")
    md.append("")
    md.append("CPU milliseconds per GiB of one core (rpfs-ec-bench; best of 3 runs, "
              "cells warm in cache). encode: parity of K data cells, per GiB of data; "
              "delta: a write's old ^ new; update: the P parity members' shares of a "
              "delta, on the data server; apply: one parity server XORing in its share; "
              "decode1 / decodeP: one / P lost data cells from K survivors, per GiB "
              "rebuilt. A write of an ec file costs its data server delta + update "
              "and each parity server apply.")
    md.append("")
    body = []
    for k, p, cell in ec_codes:
        m = dict(k=k, p=p, cell=cell)
        body.append([f"ec:{k}+{p}", size_name(cell)] +
                    [fmt(None if val("ec_cost", "s/GiB", op=op, **m) is None
                         else 1000 * val("ec_cost", "s/GiB", op=op, **m))
                     for op in ec_ops])
    table(["code", "cell"] + [op + " ms/GiB" for op in ec_ops], body)

# ---- metadata ----------------------------------------------------------------------
md.append("## Metadata operations (librpfs)")
md.append("")
md.append("N empty files created in one directory, listed, stat'ed and removed "
          "one at a time by one client: microseconds per operation. O(log files) "
          "shows as nearly flat rows.")
md.append("")
body = []
counts = sorted({int(kv["files"]) for _, kv, _ in sel("meta")})
for n in counts:
    body.append([str(n)] + [fmt(val("meta", op=op, files=n)) for op in ("create", "stat", "remove")])
table(["files", "create us", "stat us", "remove us"], body)
plot("meta", "metadata operations", "files in the directory", "microseconds per operation",
     [(op, [(n, val("meta", op=op, files=n)) for n in counts if val("meta", op=op, files=n)], False)
      for op in ("create", "stat", "remove")], xtics=str)

# ---- many clients (issue 31) ----------------------------------------------------------
if sel("clients"):
    md.append("## Many clients")
    md.append("")
    md.append("C clients, each its own rpfs_init (its own connection to every server), "
              "in up to 8 processes of threads; each writes its records of 64 KiB to its "
              "own region of one shared file striped over 1 or 4 I/O servers, then reads "
              "them back (every byte checked). MB/s: every client's bytes over the first "
              "start to the last end; p50/p99: per call, over all calls; fairness: the "
              "slowest client's MB/s over the fastest's (each over its own start to end).")
    md.append("")
    ctgt = []
    series = []
    for srv in sorted({int(kv["servers"]) for _, kv, _ in sel("clients", "MB/s")}):
        conns = sorted({int(kv["conns"]) for _, kv, _ in sel("clients", "MB/s", servers=srv)})
        body = []
        for c in conns:
            m = dict(servers=srv, conns=c)
            rec = sel("clients", "MB/s", op="write", **m)
            line = [str(c), rec[0][1].get("records", "?") if rec else "-"]
            for op in ("write", "read"):
                line += [fmt(val("clients", "MB/s", op=op, **m)),
                         fmt(val("clients", "us_p50", op=op, **m)),
                         fmt(val("clients", "us_p99", op=op, **m)),
                         fmt(val("clients", "fairness", op=op, **m), 2)]
            body.append(line)
        md.append("### %d I/O server%s" % (srv, "" if srv == 1 else "s"))
        md.append("")
        table(["connections", "records a client", "write MB/s", "p50 us", "p99 us",
               "fairness", "read MB/s", "p50 us", "p99 us", "fairness"], body)
        top = conns[-1] if conns else None
        for op in ("write", "read"):
            pts = [(c, val("clients", "MB/s", op=op, servers=srv, conns=c)) for c in conns]
            pts = [(c, v) for c, v in pts if v is not None]
            series.append(("%d I/O server%s, %s" % (srv, "" if srv == 1 else "s", op), pts,
                           op == "read"))
            if not pts:
                continue
            best = max(pts, key=lambda p: p[1])
            last = val("clients", "MB/s", op=op, servers=srv, conns=top)
            if last is not None:
                ctgt.append(["%d I/O server%s, %s: aggregate at %d connections vs the best count"
                             % (srv, "" if srv == 1 else "s", op, top),
                             "%.0f%% (%s / %s MB/s at %d)" % (100 * last / best[1], fmt(last),
                                                              fmt(best[1]), best[0]),
                             ">= 90%", "met" if last >= 0.9 * best[1] else "not met"])
            fair = val("clients", "fairness", op=op, servers=srv, conns=top)
            worst = min(((val("clients", "fairness", op=op, servers=srv, conns=c), c)
                         for c in conns if val("clients", "fairness", op=op, servers=srv,
                                                   conns=c) is not None), default=None)
            if fair is not None:
                ctgt.append(["%d I/O server%s, %s: slowest client vs fastest at %d connections"
                             % (srv, "" if srv == 1 else "s", op, top),
                             "%.0f%% (worst %.0f%% at %d)" % (100 * fair, 100 * worst[0],
                                                               worst[1]),
                             ">= 50%", "met" if fair >= 0.5 else "not met"])
    idle = sorted({int(kv["conns"]) for _, kv, _ in sel("clients", "KiB/conn", op="idle")})
    bound = sel("clients", "KiB/conn", op="bound")
    bnd = float(bound[0][0]["value"]) if bound else None
    if idle:
        md.append("### Server memory per connection")
        md.append("")
        md.append("VmRSS of every rpfsd (sum) before C clients connect and while each "
                  "holds an idle connection to every server: (held - before) / (C x "
                  "servers). What earlier experiments made the servers allocate and keep "
                  "(allocator arenas, the transfer pools) is in the before figure, so "
                  "this is what one more connection costs.")
        md.append("")
        body = []
        for c in idle:
            m = dict(op="idle", conns=c)
            body.append([str(c), fmt(val("clients", "KiB_rss_before", **m)),
                         fmt(val("clients", "KiB_rss_held", **m)),
                         fmt(val("clients", "KiB/conn", **m), 1)])
        table(["idle connections a server", "servers' RSS before KiB", "held KiB",
               "KiB a connection"], body)
        top = idle[-1]
        per = val("clients", "KiB/conn", op="idle", conns=top)
        if bnd is not None:
            kv = bound[0][1]
            md.append("The settings bound what a connection's buffers may take: a server "
                      "maps, for each connection, `credits` receives of `inline_max` + 4 "
                      "KiB, `fast_slots` Fast RDMA slots of `fast_max` + 4 KiB, and send "
                      "buffers of `fast_max` + 4 KiB for `credits` + 4 messages, touched "
                      "only as used: here (credits %s, inline_max %s, fast_max %s, "
                      "fast_slots %s) %s KiB a connection at most. An idle connection "
                      "has touched few of those pages; the bound does not cover "
                      "libfabric's own endpoint state or the kernel's socket buffers "
                      "(which are not in RSS)."
                      % (kv.get("credits"), size_name(kv.get("inline_max", 0)),
                         size_name(kv.get("fast_max", 0)), kv.get("fast_slots"), fmt(bnd)))
            md.append("")
        if per is not None:
            ctgt.append(["server memory per idle connection (%d a server)" % top,
                         "%s KiB" % fmt(per, 1),
                         "reported, <= the settings' bound%s"
                         % (" (%s KiB)" % fmt(bnd) if bnd is not None else ""),
                         "met" if bnd is not None and per <= bnd else "not met"])
    md.append("Issue 31's many-client targets, from this run:")
    md.append("")
    table(["target", "this run", "wanted", ""], ctgt)
    plot("clients", "many clients: aggregate bandwidth, 64 KiB records", "client connections",
         "MB/s", series, xtics=str)

# ---- CPU ----------------------------------------------------------------------------
md.append("## CPU seconds per GiB moved")
md.append("")
md.append("One process, contiguous transfers, write then read: client CPU "
          "(getrusage of the MPI process, timed loops only); rpfs server CPU "
          "(/proc/PID/stat of every rpfsd, over the whole run, writes and reads "
          "together).")
md.append("")
body = []
for op in ("write", "read"):
    a = val("cpu", "s/GiB", system="rpfs", op="client_" + op)
    b = val("cpu", "s/GiB", system="ufs", op="client_" + op)
    body.append(["client, " + op, fmt(a, 3), fmt(b, 3), ratio(a, b)])
body.append(["servers, write + read", fmt(val("cpu", "s/GiB", system="rpfs", op="server"), 3), "-", "-"])
table(["", "rpfs s/GiB", "ufs s/GiB", "rpfs/ufs"], body)

md.append("## Plots")
md.append("")
for f in sorted(os.listdir(PLOTS)):
    if f.endswith(".gp"):
        md.append("- [%s.png](%s.png)" % (f[:-3], f[:-3]))
md.append("")
open(os.path.join(OUT, "results.md"), "w").write("\n".join(md) + "\n")
print("wrote %s" % os.path.join(OUT, "results.md"))
