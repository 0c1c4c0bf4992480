#!/usr/bin/env python3
"""bench/views report: RESULTS.md from run.sh's CSV (medians, p50/p99, the issue's ratios)."""
import csv
import sys

raw, logs, version, params, commit = sys.argv[1:6]
rows = list(csv.DictReader(open(raw)))
by = {(r["impl"], r["variant"]): r for r in rows}
names = {"pf": "proctime keep-first", "pl": "proctime keep-last (UB)",
         "rf": "rowtime keep-first (+ watermark)", "rl": "rowtime keep-last (UB)"}
out = []
out.append("# Dedup views benchmark (bench/views)\n")
out.append(f"One run of `bench/views/run.sh` ({params}) at commit `{commit}`, "
           f"{open(version).read().strip().split(',')[0]}, `synchronous_commit = on`, every call "
           "its own transaction (timed with its COMMIT). Rounds interleave every variant and "
           "implementation. rows/s = batch / median call time.\n")
out.append("## dedup_advance vs the PL/pgSQL operator vs recomputing DISTINCT ON\n")
out.append("| variant | impl | rows/s | p50 ms | p99 ms | native / this |")
out.append("| --- | --- | ---: | ---: | ---: | ---: |")
for v in ["pf", "pl", "rf", "rl"]:
    nat = float(by[("native", v)]["rows_per_s"])
    for impl in ["native", "plpgsql", "recompute"]:
        r = by[(impl, v)]
        ratio = "" if impl == "native" else f"{nat / float(r['rows_per_s']):.1f}x"
        out.append(f"| {names[v]} | {impl} | {r['rows_per_s']} | {r['p50_ms']} | {r['p99_ms']} | {ratio} |")
out.append("\nGoal: native >= 5x the PL/pgSQL operator.\n")
out.append("### Above the commit floor\n")
out.append("commit-floor: one row update and its COMMIT (the WAL flush every call of either "
           "implementation pays), timed in the same rounds. The work of a call above it:\n")
out.append("| variant | floor p50 ms | native p50 - floor | plpgsql p50 - floor | ratio above the floor |")
out.append("| --- | ---: | ---: | ---: | ---: |")
for v in ["pf", "pl", "rf", "rl"]:
    f = float(by[("commit-floor", v)]["p50_ms"])
    n = float(by[("native", v)]["p50_ms"]) - f
    p_ = float(by[("plpgsql", v)]["p50_ms"]) - f
    ratio = f"{p_ / n:.1f}x" if n > 0 else "n/a"
    out.append(f"| {names[v]} | {f:.2f} | {n:.2f} | {p_:.2f} | {ratio} |")
out.append("")
out.append("## Cost per new row vs history (1k vs 1M consumed rows)\n")
out.append("| variant | 1k: rows/s | 1k: p50 / p99 ms | 1M: rows/s | 1M: p50 / p99 ms | 1M / 1k |")
out.append("| --- | ---: | ---: | ---: | ---: | ---: |")
for v in ["pf", "pl", "rf", "rl"]:
    a, b = by[("native-1k", v)], by[("native-1M", v)]
    out.append(f"| {names[v]} | {a['rows_per_s']} | {a['p50_ms']} / {a['p99_ms']} | {b['rows_per_s']} | "
               f"{b['p50_ms']} / {b['p99_ms']} | {float(b['rows_per_s']) / float(a['rows_per_s']):.2f}x |")
out.append("\nGoal: 1M / 1k >= 0.8x.\n")
out.append("## Same answers\n")
out.append("| variant | changes | native changelog == PL/pgSQL changelog |")
out.append("| --- | ---: | --- |")
for r in csv.DictReader(open(logs)):
    out.append(f"| {names[r['variant']]} | {r['changes']} | {'yes' if r['identical'] == 't' else 'NO'} |")
print("\n".join(out))
