"""Report of bench/retention/run.sh: push latency (p50/p99) and throughput per phase, and the
purge/baseline ratios. Arguments: tmp-dir out-dir stamp clients batch rows seconds commit;
writes out-dir/RESULTS.md and out-dir/raw/retention-purge-<stamp>.csv."""
import csv
import glob
import os
import sys

tmp, out, stamp, clients, batch, rows, seconds, commit = sys.argv[1:9]


def pct(values, p):
    """The p-th percentile (nearest rank) of a list."""
    v = sorted(values)
    if not v:
        return float("nan")
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


def latencies(prefix, lo=None, hi=None):
    """Latencies (ms) of the transactions in pgbench logs prefix.*, started within [lo, hi]."""
    lat = []
    for f in glob.glob(os.path.join(tmp, prefix + ".*")):
        if f.endswith(".out"):
            continue
        with open(f) as fh:
            for line in fh:
                parts = line.split()
                # client_id transaction_no latency_us script_no epoch_s epoch_us
                us, end = int(parts[2]), int(parts[4]) + int(parts[5]) / 1e6
                start = end - us / 1e6
                if lo is not None and (start < lo or start > hi):
                    continue
                lat.append(us / 1000.0)
    return lat


phases = list(csv.DictReader(open(os.path.join(tmp, "phases.csv"))))
lines = []
raw = [["round", "phase", "pushes", "pushes_per_s", "p50_ms", "p99_ms", "purge_rows", "purge_s"]]
summary = {"baseline": [], "purge": []}
for ph in phases:
    r, kind = ph["round"], ph["phase"]
    if kind == "baseline":
        lat = latencies("r%s_base" % r)
        span = float(ph["end_epoch"]) - float(ph["start_epoch"])
    else:
        lo, hi = float(ph["start_epoch"]), float(ph["end_epoch"])
        lat = latencies("r%s_purge" % r, lo, hi)
        span = hi - lo
    row = [r, kind, len(lat), round(len(lat) / span, 1), round(pct(lat, 50), 2), round(pct(lat, 99), 2),
           ph["purge_rows"], ph["purge_seconds"]]
    raw.append(row)
    summary[kind].append(row)

os.makedirs(os.path.join(out, "raw"), exist_ok=True)
with open(os.path.join(out, "raw", "retention-purge-%s.csv" % stamp), "w", newline="") as fh:
    csv.writer(fh).writerows(raw)


def med(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


b99 = med([x[5] for x in summary["baseline"]])
p99 = med([x[5] for x in summary["purge"]])
b50 = med([x[4] for x in summary["baseline"]])
p50 = med([x[4] for x in summary["purge"]])
bt = med([x[3] for x in summary["baseline"]])
pt = med([x[3] for x in summary["purge"]])
md = []
md.append("# Push latency while retention purges (issue 6)\n")
md.append("Recorded by `bash bench/retention/run.sh` (commit %s, %s UTC). One run, phases interleaved "
          "in rounds: **baseline** = pgbench pushes alone; **purge** = the same pushes while "
          "`CALL queen.run_retention_procedure(%s)` (batch rows, pause seconds) deletes %s rows (half segments, half hash rows, "
          "all past retention) of another partition; only pushes that started while the purge ran "
          "count. %s pgbench clients, `queen.push` of 10 new messages (~100-byte payloads) to one of "
          "8 partitions, `synchronous_commit = on`, one shared 2-core machine.\n"
          % (commit, stamp, batch, rows, clients))
md.append("| round | phase | pushes | pushes/s | p50 ms | p99 ms | rows purged | purge s |")
md.append("| --- | --- | --- | --- | --- | --- | --- | --- |")
for row in raw[1:]:
    md.append("| " + " | ".join(str(x) for x in row) + " |")
md.append("")
md.append("| median over rounds | baseline | during purge | ratio (purge / baseline) |")
md.append("| --- | --- | --- | --- |")
md.append("| push p99 (ms) | %.2f | %.2f | **%.2fx** (target <= 2x) |" % (b99, p99, p99 / b99))
md.append("| push p50 (ms) | %.2f | %.2f | %.2fx |" % (b50, p50, p50 / b50))
md.append("| pushes/s | %.1f | %.1f | %.2fx |" % (bt, pt, pt / bt))
md.append("")
md.append("Raw figures: `retention-purge-%s.csv`." % stamp)
text = "\n".join(md) + "\n"
with open(os.path.join(out, "RESULTS.md"), "w") as fh:
    fh.write(text)
print(text)
