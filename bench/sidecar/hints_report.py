#!/usr/bin/env python3
"""bench/sidecar/cache/RESULTS.md for the issue-8 sidecar benchmark (bench/sidecar/hints.sh): medians over
rounds per variant, spread, the cache's verdict mix, the ratios and targets of issue 8."""
import argparse
import csv
import statistics
from collections import defaultdict

NAMES = {
    ("w1m", "on"): "1M hashes/partition: sidecar, cache on",
    ("w1m", "off"): "1M hashes/partition: sidecar, cache off",
    ("e100", "on"): "100 empty partitions: sidecar, cache on (closed loop = peak)",
    ("e100", "half"): "100 empty partitions: sidecar, open loop at half the peak",
    ("e100", "ins"): "100 empty partitions: plain INSERT, same 64 clients",
    ("e100", "off"): "100 empty partitions: sidecar, cache off",
}
ORDER = list(NAMES)


def num(x):
    """A CSV field as a float (0 when empty)."""
    try:
        return float(x)
    except ValueError:
        return 0.0


def med(rows, key):
    """Median of a column."""
    return statistics.median([num(r[key]) for r in rows]) if rows else 0.0


def total(rows, key):
    """Sum of a column."""
    return sum(num(r[key]) for r in rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("out")
    ap.add_argument("--header", default="")
    ap.add_argument("--note", default="")
    ap.add_argument("--reading", default="", help="a Markdown file appended as the reading")
    a = ap.parse_args()
    by = defaultdict(list)
    with open(a.csv) as f:
        for r in csv.DictReader(f):
            by[(r["scenario"], r["variant"])].append(r)
    L = ["# Sidecar cache and latency under durable commits (issue 8): bench/sidecar/hints.sh", ""]
    L += [a.header, ""]
    if a.note:
        L += ["Note: " + a.note, ""]
    L += ["Load: 64 keep-alive HTTP connections, each request 10 messages to one partition chosen "
          "at random, one of them (10%) a repeat of a transactionId an earlier answered request "
          "stored. Every answer is checked (repeat -> `duplicate`, fresh -> `queued`). Plain "
          "INSERT: the same 64 clients, one autocommit 10-row INSERT per call into an unindexed "
          "table. Medians over rounds; spread = (max - min) / median of msg/s; p50/p99 per "
          "request (open loop: from the scheduled send time).", ""]
    L += ["| variant | msg/s | spread | p50 ms | p99 ms | CPU-s per M msgs (sidecar + PG) | "
          "sidecar CPU-s/M | PG CPU-s/M | machine busy | mismatches+errors | rounds |",
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    m = {}
    for k in ORDER:
        rows = by.get(k, [])
        if not rows:
            continue
        v = [num(r["msgs_per_s"]) for r in rows]
        md = statistics.median(v)
        m[k] = {"msgs": md, "p50": med(rows, "p50_ms"), "p99": med(rows, "p99_ms")}
        sp = (max(v) - min(v)) / md if md else 0
        bad = int(total(rows, "mismatches") + total(rows, "errors"))
        rate = f" (rate {int(med(rows, 'rate')):,} msg/s)" if k[1] == "half" else ""
        msgs = med(rows, "messages") / 1e6 or 1
        L.append(f"| {NAMES[k]}{rate} | {md:,.0f} | {sp:.0%} | {m[k]['p50']:.2f} | "
                 f"{m[k]['p99']:.2f} | {med(rows, 'cpu_s_per_M'):.2f} | "
                 f"{med(rows, 'sidecar_cpu_s') / msgs:.2f} | {med(rows, 'pg_cpu_s') / msgs:.2f} | "
                 f"{med(rows, 'machine_busy'):.2f} | {bad} | {len(rows)} |")
    L += ["", "## What the cache did", "",
          "Flush verdicts summed over rounds (one per segment sent with the cache on): `vouch` = "
          "no hash of the segment resident, p_verified = verified_upto; `hinted` = some resident, "
          "vouched with a hint each; `local_hit` = resident without hints (never on this path); "
          "other = suppressed, gap, load failed. PostgreSQL's judgement of the hinted vouches is "
          "`queen_sidecar_hint_segments_total` (from `queen.push_hint_stats()`).", "",
          "| variant | segments | vouch | hinted | local_hit | other | narrowed | hinted confirmed | "
          "hinted sent to full probe | segments per SQL call |",
          "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    narrowed = {}
    for k in ORDER:
        rows = by.get(k, [])
        if not rows or k[1] == "ins":
            continue
        vo, hi, lh, ot = (total(rows, c) for c in ("vouch", "hinted", "local_hit", "other_verdicts"))
        ok, fb = total(rows, "hint_confirmed"), total(rows, "hint_fallbacks")
        segs = vo + hi + lh + ot
        fl, calls = total(rows, "flushes"), total(rows, "sql_calls")
        if segs == 0:  # cache off: every segment probed in full
            L.append(f"| {NAMES[k]} | {fl:,.0f} | 0 | 0 | 0 | 0 | 0.0% | 0 | 0 | "
                     f"{fl / calls if calls else 0:.2f} |")
            continue
        nar = (vo + ok) / segs
        narrowed[k] = nar
        L.append(f"| {NAMES[k]} | {segs:,.0f} | {vo:,.0f} | {hi:,.0f} | {lh:,.0f} | {ot:,.0f} | "
                 f"{nar:.1%} | {ok:,.0f} | {fb:,.0f} | {fl / calls if calls else 0:.2f} |")
    L += ["", "`narrowed` = (vouch + hinted confirmed) / segments: the flushes PostgreSQL served "
          "without the full-window probe.", ""]

    def r(a_, b_):
        return m[a_]["msgs"] / m[b_]["msgs"] if a_ in m and b_ in m and m[b_]["msgs"] else 0

    on_off = r(("w1m", "on"), ("w1m", "off"))
    side_ins = r(("e100", "on"), ("e100", "ins"))
    half_p99 = m.get(("e100", "half"), {}).get("p99", 0)
    nar_w = narrowed.get(("w1m", "on"), 0)
    nar_e = narrowed.get(("e100", "on"), 0)
    L += ["## Targets (issue 8, sidecar part)", "", "| target | measured | verdict |",
          "| --- | --- | --- |"]
    L.append(f"| with 10% repeats the cache narrows >= 90% of flushes | {nar_w:.1%} (1M), "
             f"{nar_e:.1%} (empty) | {'met' if min(nar_w, nar_e) >= 0.9 else '**missed**'} |")
    L.append(f"| cache on >= 1.2x cache off, 1M hashes per partition | {on_off:.2f}x | "
             f"{'met' if on_off >= 1.2 else '**missed**'} |")
    L.append(f"| 64 small producers through the sidecar >= 1.5x plain INSERT (64 clients) | "
             f"{side_ins:.2f}x | {'met' if side_ins >= 1.5 else '**missed**'} |")
    L.append(f"| sidecar at half its peak rate: p99 <= 10 ms | {half_p99:.2f} ms | "
             f"{'met' if 0 < half_p99 <= 10 else '**missed**'} |")
    L.append("| synchronous_commit = on in every run | checked by the script before loading | met |")
    L.append("")
    if a.reading:
        with open(a.reading) as f:
            L += [f.read().rstrip("\n"), ""]
    with open(a.out, "w") as f:
        f.write("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
