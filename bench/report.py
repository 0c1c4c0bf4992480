#!/usr/bin/env python3
"""Turn bench/run.sh's raw CSV (and its .meta) into medians, ratios and the targets of issue 2.

usage: report.py RAW.csv RESULTS.md   (prints the same Markdown it writes)
Standard library only.
"""
import csv
import os
import statistics
import sys

NAMES = {
    "plain": "plain INSERT (row per message, no index)",
    "onconflict": "INSERT ... ON CONFLICT DO NOTHING",
    "plref": "PL/pgSQL probe-then-allocate (plref.push)",
    "push": "queen.push (jsonb)",
    "push_nocache": "queen.push, probe cache off",
    "seg_full": "queen.push_segment, p_verified = -1 (cache off)",
    "seg_cached": "queen.push_segment, p_verified = -1, cache on",
    "seg_vouch": "queen.push_segment, vouched",
}
ORDER = ["plain", "onconflict", "plref", "push", "push_nocache", "seg_full", "seg_cached", "seg_vouch"]
SCEN_ORDER = ["base", "empty", "w100k", "w1m"]


def load(path):
    """Rows of the raw CSV, with the measured rate as a float (None on error)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["rate"] = float(r["msgs_per_s"]) if r.get("msgs_per_s") else None
    return rows


def load_meta(path):
    """key=value lines written by run.sh."""
    meta = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    meta[k] = v
    return meta


def fmt_rate(x):
    """A rate in msg/s, or a dash."""
    return "-" if x is None else f"{x:,.0f}"


def fmt_ratio(x):
    """A ratio with two decimals, or a dash."""
    return "-" if x is None else f"{x:.2f}x"


def median_or_none(xs):
    """The median of the non-missing values, or None."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Table:
    """Per (scenario, variant): the rates over rounds and the per-round pairing with baselines."""

    def __init__(self, rows):
        self.rows = rows
        self.cells = {}
        for r in rows:
            self.cells.setdefault((r["scenario"], r["variant"]), []).append(r)

    def rates(self, scen, var):
        """Measured rates over rounds (errors left out)."""
        return [r["rate"] for r in self.cells.get((scen, var), []) if r["rate"] is not None]

    def median(self, scen, var):
        """Median rate over rounds."""
        return median_or_none(self.rates(scen, var))

    def ratio(self, scen_a, var_a, scen_b, var_b):
        """Ratio of medians a / b."""
        a, b = self.median(scen_a, var_a), self.median(scen_b, var_b)
        return a / b if a and b else None

    def round_ratios(self, scen, var_a, var_b):
        """Per-round ratios a / b inside one scenario (same round = same noise)."""
        by_round = {}
        for r in self.rows:
            if r["scenario"] == scen and r["rate"] is not None:
                by_round.setdefault(r["round"], {})[r["variant"]] = r["rate"]
        return [d[var_a] / d[var_b] for d in by_round.values() if var_a in d and var_b in d and d[var_b]]

    def col_median(self, scen, var, col):
        """Median of a numeric column over rounds."""
        xs = []
        for r in self.cells.get((scen, var), []):
            try:
                xs.append(float(r[col]))
            except (TypeError, ValueError):
                pass
        return median_or_none(xs)

    def col_sum(self, scen, var, col):
        """Sum of an integer column over rounds."""
        total = 0
        for r in self.cells.get((scen, var), []):
            try:
                total += int(r[col])
            except (TypeError, ValueError):
                pass
        return total

    def errors(self, scen, var):
        """Error texts of failed measurements."""
        return [r["error"] for r in self.cells.get((scen, var), []) if r["rate"] is None and r.get("error")]


def scenario_title(scen, meta):
    """A heading for a scenario from run.sh's meta line."""
    shape = meta.get(f"scenario_{scen}", "").split("|")[0].split()
    if len(shape) == 3:
        parts, window, prefill = shape
        pre = "empty window" if prefill == "0" else f"{int(prefill):,} hashes prefilled per partition"
        return f"{scen}: {parts} partitions, window {window} s, {pre}"
    return scen


def targets(t):
    """(label, measured, needed, scope) for each target of issue 2."""
    out = []

    def add(label, value, need, how, pairs=None):
        rng = ""
        if pairs:
            rng = f"per round {min(pairs):.2f}-{max(pairs):.2f}"
        out.append((label, value, need, how, rng))

    add("full-window probe: seg_full / plref at 100k hashes", t.ratio("w100k", "seg_full", "w100k", "plref"),
        5.0, "w100k", t.round_ratios("w100k", "seg_full", "plref"))
    add("vouched probe flat: seg_vouch at 1M / empty", t.ratio("w1m", "seg_vouch", "empty", "seg_vouch"), 0.9,
        "w1m vs empty")
    add("queen.push cache: push at 1M / empty", t.ratio("w1m", "push", "empty", "push"), 0.5, "w1m vs empty")
    add("queen.push / plain INSERT", t.ratio("base", "push", "base", "plain"), 0.8, "base",
        t.round_ratios("base", "push", "plain"))
    add("queen.push / ON CONFLICT", t.ratio("base", "push", "base", "onconflict"), 1.6, "base",
        t.round_ratios("base", "push", "onconflict"))
    add("binary path vouched / plain INSERT", t.ratio("base", "seg_vouch", "base", "plain"), 1.0, "base",
        t.round_ratios("base", "seg_vouch", "plain"))
    return out


def render(rows, meta, raw_name):
    """The Markdown report."""
    t = Table(rows)
    scens = [s for s in SCEN_ORDER if any(r["scenario"] == s for r in rows)]
    L = []
    quick = meta.get("quick") == "1"
    L.append("# queen benchmark results" + (" (QUICK MODE: smoke run, not a recorded result)" if quick else ""))
    L.append("")
    if meta.get("note"):
        L.append(f"**Note: {meta['note']}**")
        L.append("")
    L.append(f"- date: {meta.get('date', '?')}")
    L.append(f"- machine: {meta.get('nproc', '?')} cores ({meta.get('cpu', '?')}), {meta.get('memory', '?')} memory, "
             "shared with other work (noisy)")
    L.append(f"- PostgreSQL {meta.get('pg_version', '?')}; queen extension {meta.get('queen_version', '?')}; "
             f"checkout {meta.get('git', '?')}")
    L.append(f"- bench server: {meta.get('settings', '?')}")
    L.append(f"- shape: {meta.get('clients', '?')} clients (one connection each, one push per transaction, "
             f"each client owns partitions i % {meta.get('clients', '?')}), {meta.get('batch', '?')} messages "
             f"per push, ~{meta.get('payload', '?')}-byte JSON payloads, 36-character transactionIds, "
             f"{meta.get('dups', '?')} repeats per push (seg_vouch: {meta.get('vouch_dups', '?')})")
    L.append(f"- {meta.get('rounds', '?')} rounds per scenario, variants interleaved (order rotated each round), "
             f"{meta.get('warmup', '?')} s warm-up + {meta.get('duration', '?')} s timed per measurement, "
             "fresh partitions per measurement")
    L.append(f"- PL/pgSQL reference hashes with: {meta.get('plref_hash', '?')}")
    L.append(f"- {meta.get('segment_storage', '')}")
    if meta.get("skipped", "").strip():
        L.append(f"- **skipped (functions missing in the extension)**: {meta['skipped'].strip()}")
    L.append(f"- raw data: `{raw_name}`")
    L.append("")
    L.append("messages/s = messages offered (repeats included) / timed seconds; median over rounds. "
             "Ratios are ratios of medians; 'per round' ranges pair variants of the same round. "
             "'window at end': offsets allocated per partition when the measurement ended (prefill "
             "plus what it pushed). 'client CPU' is the load client's share of all cores, 'machine "
             "busy' the share of all cores busy during the timed part (anything above client + "
             "PostgreSQL is other work on the machine).")
    L.append("")

    L.append("## Targets (issue 2)")
    L.append("")
    L.append("| target | measured | needed | met | scope | spread |")
    L.append("| --- | --- | --- | --- | --- | --- |")
    for label, value, need, how, rng in targets(t):
        met = "-" if value is None else ("yes" if value >= need else "**no**")
        L.append(f"| {label} | {fmt_ratio(value)} | >= {need:.1f}x | {met} | {how} | {rng} |")
    L.append("")
    L.append("Cross-scenario ratios (1M vs empty) compare measurements of different scenarios, so the "
             "noise of the machine is not cancelled; the table below also shows them normalised by "
             "plain INSERT of the same scenario.")
    L.append("")

    for s in scens:
        L.append(f"## {scenario_title(s, meta)}")
        L.append("")
        L.append("| variant | median msg/s | min | max | vs plain | vs ON CONFLICT | p50 ms | p99 ms | "
                 "window at end | repeats caught | verdict errors | client CPU | machine busy |")
        L.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for v in ORDER:
            if (s, v) not in t.cells:
                continue
            rs = t.rates(s, v)
            wend = t.col_median(s, v, "window_end")
            exp, seen = t.col_sum(s, v, "dups_expected"), t.col_sum(s, v, "dups_seen")
            errs = t.errors(s, v)
            cpu, busy = t.col_median(s, v, "client_cpu_pct"), t.col_median(s, v, "machine_busy_pct")
            L.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
                NAMES[v], fmt_rate(t.median(s, v)), fmt_rate(min(rs) if rs else None),
                fmt_rate(max(rs) if rs else None),
                fmt_ratio(t.ratio(s, v, s, "plain")),
                fmt_ratio(t.ratio(s, v, s, "onconflict")),
                "-" if t.col_median(s, v, "p50_ms") is None else f"{t.col_median(s, v, 'p50_ms'):.1f}",
                "-" if t.col_median(s, v, "p99_ms") is None else f"{t.col_median(s, v, 'p99_ms'):.1f}",
                "-" if wend is None else f"{wend:,.0f}",
                "-" if v == "plain" else f"{seen}/{exp}",
                t.col_sum(s, v, "verdict_errors"),
                "-" if cpu is None else f"{cpu:.0f}%", "-" if busy is None else f"{busy:.0f}%"))
            for e in errs[:2]:
                L.append(f"| ERROR ({v}) | {e[:200]} | | | | | | | | | | | |")
        L.append("")
        pushes = t.col_sum(s, "push", "pushes")
        if pushes and any(r.get("cache_rows_read") for r in t.cells.get((s, "push"), [])):
            L.append("queen.push probe cache over the timed parts (`queen.probe_cache_stats()`): "
                     f"{t.col_sum(s, 'push', 'cache_hits') / pushes:.1f} hits, "
                     f"{t.col_sum(s, 'push', 'cache_confirmed') / pushes:.1f} confirmed, "
                     f"{t.col_sum(s, 'push', 'cache_fallbacks') / pushes:.2f} fallbacks to the full probe and "
                     f"{t.col_sum(s, 'push', 'cache_rows_read') / pushes:,.1f} window rows read per push (segment rows since 0.3.0, log_txns rows before).")
            L.append("")

    if any(s in scens for s in ("w100k", "w1m")):
        L.append("## Window size effect")
        L.append("")
        L.append("| variant | 100k / base | 1M / empty | 1M / empty, each normalised by plain INSERT |")
        L.append("| --- | --- | --- | --- |")
        for v in ORDER:
            if v in ("plain", "onconflict"):
                continue
            r100 = t.ratio("w100k", v, "base", v)
            r1m = t.ratio("w1m", v, "empty", v)
            a, b = t.ratio("w1m", v, "w1m", "plain"), t.ratio("empty", v, "empty", "plain")
            norm = a / b if a and b else None
            if r100 is None and r1m is None:
                continue
            L.append(f"| {NAMES[v]} | {fmt_ratio(r100)} | {fmt_ratio(r1m)} | {fmt_ratio(norm)} |")
        fv = t.ratio("base", "seg_full", "base", "seg_vouch")
        L.append("")
        L.append("Full-window / vouched binary path: " + ", ".join(
            f"{s} {fmt_ratio(t.ratio(s, 'seg_full', s, 'seg_vouch'))}" for s in scens
            if t.median(s, "seg_full") and t.median(s, "seg_vouch")) + (
            " (seg_full carries the repeats, seg_vouch does not unless --vouch-dups)" if fv else ""))
        L.append("")

    calib = [("plain INSERT", "base", "plain", 300000), ("ON CONFLICT", "base", "onconflict", 165000),
             ("PL/pgSQL, 100k hashes", "w100k", "plref", 11000), ("PL/pgSQL, 1M hashes", "w1m", "plref", 1000)]
    calib = [(a, t.median(s, v), ref) for a, s, v, ref in calib if t.median(s, v)]
    if calib:
        L.append("## Next to the reference's figures quoted in issue 2")
        L.append("")
        L.append("Those were measured on another machine of this kind: compare ratios, not absolute numbers. "
                 "A PL/pgSQL row whose 'here / quoted' is well below plain INSERT's means this run's "
                 "PL/pgSQL probe is slower than the reference's was, which flatters ratios against plref.")
        L.append("")
        L.append("| what | here | quoted | here / quoted |")
        L.append("| --- | --- | --- | --- |")
        for a, here, ref in calib:
            L.append(f"| {a} | {fmt_rate(here)} | {fmt_rate(ref)} | {here / ref:.2f} |")
        L.append("")

    L.append("## What each variant does")
    L.append("")
    L.append("- **plain**: `INSERT INTO bench.plain_msgs (partition_id, txn, payload) VALUES (...), ... "
             "(100 rows)`, prepared, text parameters; table without any index; repeats are stored again.")
    L.append("- **onconflict**: the same into `bench.oc_msgs` with `UNIQUE (partition_id, txn)` and "
             "`ON CONFLICT (partition_id, txn) DO NOTHING`; checks the row count (90 inserted).")
    L.append("- **plref**: `SELECT * FROM plref.push(queue, partition, items jsonb)`, the PL/pgSQL "
             "probe-then-allocate of `bench/sql/plref.sql` (row lock FOR UPDATE, probe joining every "
             "window blob's unnested hashes with the incoming ones, MIN offset, survivors allocated, one "
             "segment row + one log_txns row), always the full window; its probe runs through EXECUTE so "
             "it is planned with the actual partition id every call (a cached generic plan scans the "
             "whole table).")
    L.append("- **push**: `SELECT * FROM queen.push(queue, partition, items jsonb)`, the items sent as one "
             "jsonb text parameter.")
    L.append("- **seg_full**: `SELECT * FROM queen.push_segment(partition_id, hashes, segment, -1)`, all "
             "four parameters binary, in sessions with `queen.probe_cache = off` so every push really "
             "probes the whole window (with the cache on, -1 calls are narrowed by it like queen.push); "
             "the client builds the segment (src/core/common/segment_codec.h) and the xxh3 hashes itself, ids "
             "are client UUIDv7s.")
    L.append("- **push_nocache / seg_cached** (extras, only when asked for): queen.push with the probe "
             "cache off; push_segment -1 with the cache on.")
    win = ("; `p_window` = the queue's window as resolve_partition gave it (the sidecar sends it too)"
           if meta.get("seg_window") == "1" else "")
    L.append("- **seg_vouch**: the same with `p_verified` = the client's last known offset of the "
             "partition, exact because a partition is pushed by one client only (no race; a vouch from "
             "`SELECT last_offset` before the call would also be sound for fresh hashes, only wider)"
             + win + ". Its batches carry no repeats by default: a vouch is a promise that none of the "
             "hashes is stored at or below it, which a client cannot make for a repeat (a sidecar sends "
             "-1 on any cache hit).")
    L.append("")
    L.append("Every answer is checked by the client: repeats must come back `duplicate` with their "
             "original offset, fresh messages `queued` at contiguous offsets ('verdict errors' counts "
             "mismatches; ON CONFLICT is checked through its row count).")
    L.append("")
    return "\n".join(L)


def main():
    """Read, render, write, print."""
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    raw, out = sys.argv[1], sys.argv[2]
    rows = load(raw)
    meta = load_meta(raw + ".meta")
    text = render(rows, meta, os.path.relpath(raw, os.path.dirname(os.path.abspath(out))))
    with open(out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
