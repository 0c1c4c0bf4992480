#!/usr/bin/env python3
"""The report of bench/durable.sh: medians, spread, ratios and the issue's targets as Markdown,
plus a PNG of msg/s by messages per call for every variant (matplotlib, Debian python3-matplotlib).

usage: durable_report.py RAW.csv OUT.md OUT.png
"""
import csv
import statistics
import sys

# The issue 8 targets: queen.push / ON CONFLICT at each call size.
TARGETS = {1: 1.0, 10: 1.5, 100: 1.6}
ORDER = ["plain", "onconflict", "push", "push_spi", "push_w0"]
LABEL = {
    "plain": "plain INSERT",
    "onconflict": "INSERT ... ON CONFLICT DO NOTHING",
    "push": "queen.push",
    "push_spi": "queen.push before (SQL statements, queen.direct_write = off)",
    "push_w0": "queen.push, window 0 (no probe)",
}


def load(path):
    """Rows of the raw CSV grouped by (scenario, clients, batch, variant)."""
    cells = {}
    errors = []
    with open(path) as f:
        for row in csv.DictReader(f):
            if row["error"]:
                errors.append(row)
                continue
            key = (row["scenario"], int(row["clients"]), int(row["batch"]), row["variant"])
            cells.setdefault(key, []).append(row)
    return cells, errors


def med(rows, col):
    """Median of one numeric column."""
    return statistics.median(float(r[col]) for r in rows)


def spread(rows):
    """min-max of msg/s across rounds, as a percentage of the median."""
    v = [float(r["msgs_per_s"]) for r in rows]
    m = statistics.median(v)
    return 100.0 * (max(v) - min(v)) / m if m else 0.0


def meta(path):
    """The key=value lines of the .meta file."""
    out = {}
    try:
        with open(path + ".meta") as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("=")
                out[k] = v
    except OSError:
        pass
    return out


def ratio_fmt(r):
    """A ratio like 1.23x, with more digits below 0.1x (so a 0.004x gap is not shown as 0.00x)."""
    return f"{r:.2f}x" if r >= 0.1 else f"{r:.3f}x" if r >= 0.01 else f"{r:.4f}x"


def fmt(x):
    """A rate like 12.3k."""
    return f"{x / 1000:.1f}k" if x >= 1000 else f"{x:.0f}"


def report(raw, md, png):
    cells, errors = load(raw)
    m = meta(raw)
    scen = sorted({k[0] for k in cells}, key=lambda s: (s != "empty", s))
    clients = sorted({k[1] for k in cells})
    batches = sorted({k[2] for k in cells})
    out = []
    out.append("# Durable-commit benchmark (issue 8): bench/durable.sh\n")
    out.append(f"Run {m.get('date', '?')}, git {m.get('git', '?')}, queen {m.get('queen_version', '?')}, "
               f"PostgreSQL {m.get('pg_version', '?')}, {m.get('nproc', '?')} cores shared with other "
               f"builds (load average before {m.get('load_before', '?')}, after {m.get('load_after', '?')}). "
               f"{m.get('settings', '')}. {m.get('rounds', '?')} rounds x {m.get('duration', '?')} s timed "
               f"(+{m.get('warmup', '?')} s warm-up), {m.get('partitions', '?')} partitions, "
               f"~{m.get('payload', '?')}-byte payloads, 10% repeats per call where the size allows "
               f"(none at 1 message per call). Medians over rounds; spread = (max-min)/median of msg/s; "
               f"p50/p99 = per call, median over rounds. Raw: `{raw.split('/')[-1]}`.\n")
    if m.get("note"):
        out.append(f"Note: {m['note']}\n")
    for s in scen:
        hist = "empty windows (fresh partitions every measurement)" if s == "empty" else \
            f"{m.get('history_' + s, m.get('history', '?'))} hashes per partition already in the window " \
            f"(prefill {m.get('prefill_' + s + '_s', '?')} s; ON CONFLICT: as many " \
            "rows per partition under its unique index; plain INSERT has no index and gets none)"
        out.append(f"\n## Scenario `{s}`: {hist}\n")
        out.append("| clients | msgs/call | variant | msg/s (median) | spread | p50 ms | p99 ms | vs ON CONFLICT | vs plain | rounds |")
        out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for c in clients:
            for b in batches:
                oc = cells.get((s, c, b, "onconflict"))
                pl = cells.get((s, c, b, "plain"))
                ocm = med(oc, "msgs_per_s") if oc else None
                plm = med(pl, "msgs_per_s") if pl else None
                for v in ORDER:
                    rows = cells.get((s, c, b, v))
                    if not rows:
                        continue
                    r = med(rows, "msgs_per_s")
                    vo = ratio_fmt(r / ocm) if ocm else ""
                    vp = ratio_fmt(r / plm) if plm else ""
                    out.append(f"| {c} | {b} | {v} | {fmt(r)} | {spread(rows):.0f}% | {med(rows, 'p50_ms'):.2f} | "
                               f"{med(rows, 'p99_ms'):.2f} | {vo} | {vp} | {len(rows)} |")
    out.append("\n## Targets of issue 8 (queen.push / ON CONFLICT, same run)\n")
    out.append("| scenario | clients | msgs/call | target | measured | met | before (push_spi / ON CONFLICT) |")
    out.append("| --- | --- | --- | --- | --- | --- | --- |")
    for s in scen:
        for c in clients:
            for b in batches:
                oc, pu = cells.get((s, c, b, "onconflict")), cells.get((s, c, b, "push"))
                if not oc or not pu or b not in TARGETS:
                    continue
                ratio = med(pu, "msgs_per_s") / med(oc, "msgs_per_s")
                sp = cells.get((s, c, b, "push_spi"))
                before = f"{med(sp, 'msgs_per_s') / med(oc, 'msgs_per_s'):.2f}x" if sp else ""
                out.append(f"| {s} | {c} | {b} | >= {TARGETS[b]:.1f}x | {ratio_fmt(ratio)} | "
                           f"{'yes' if ratio >= TARGETS[b] else 'no'} | {before} |")
    bad = sum(int(r["verdict_errors"] or 0) for k, rows in cells.items() for r in rows if k[3] != "push_w0")
    w0 = sum(int(r["verdict_errors"] or 0) for k, rows in cells.items() for r in rows if k[3] == "push_w0")
    out.append(f"\nVerdict errors (client checks of every answer, every variant but push_w0): {bad}. "
               f"Failed measurements: {len(errors)}. push_w0 gets the same repeats but its queue has window 0, "
               f"which turns deduplication off: its {w0} repeats answered `queued` and were stored anew, as "
               f"window 0 must (the client counts them as mismatches; the work per call is the same).")
    for e in errors:
        out.append(f"- {e['scenario']} r{e['round']} {e['variant']}: {e['error'][:200]}")
    out.append(f"\n![msg/s by messages per call](durable.png)\n")
    with open(md, "w") as f:
        f.write("\n".join(out) + "\n")
    plot(cells, scen, clients, batches, png)


def plot(cells, scen, clients, batches, png):
    """One panel per (scenario, clients): msg/s (log scale) by messages per call, one line per variant."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("durable_report: matplotlib missing (Debian python3-matplotlib): no plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(len(scen), len(clients), figsize=(5 * len(clients), 3.8 * len(scen)),
                             squeeze=False, sharey=True)
    for i, s in enumerate(scen):
        for j, c in enumerate(clients):
            ax = axes[i][j]
            for v in ORDER:
                xs, ys, lo, hi = [], [], [], []
                for b in batches:
                    rows = cells.get((s, c, b, v))
                    if not rows:
                        continue
                    vals = [float(r["msgs_per_s"]) for r in rows]
                    xs.append(b)
                    ys.append(statistics.median(vals))
                    lo.append(statistics.median(vals) - min(vals))
                    hi.append(max(vals) - statistics.median(vals))
                if xs:
                    ax.errorbar(xs, ys, yerr=[lo, hi], marker="o", capsize=3, label=LABEL[v])
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xticks(batches)
            ax.set_xticklabels([str(b) for b in batches])
            ax.set_title(f"{s}, {c} clients, synchronous_commit=on")
            ax.set_xlabel("messages per call")
            if j == 0:
                ax.set_ylabel("messages/s (median, bars: min-max)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=90)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    report(*sys.argv[1:])
