"""Medians over rounds and the issue-6 ratios for bench/acks_probe/run.sh."""
import csv, statistics, subprocess, sys

path, sync_commit, secs, clients = sys.argv[1:5]
rows = list(csv.DictReader(open(path)))
def med(kind, scen, col):
    v = [float(r[col]) for r in rows if r["kind"] == kind and r["scenario"] == scen]
    return statistics.median(v) if v else float("nan")
try:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
except Exception:
    commit = "?"
print("# Acks and the window-bounded probe (issue 6)\n")
print(f"One run of `bash bench/acks_probe/run.sh` (commit {commit}; raw: `{path.split('/')[-1]}`), "
      f"pgbench, {clients} clients, {secs} s per measurement, scenarios interleaved in rounds, "
      f"synchronous_commit = {sync_commit}, one shared 2-core machine. Medians over rounds.\n")
print("| kind | scenario | tx/s | p50 µs | p99 µs |")
print("| --- | --- | --- | --- | --- |")
seen = []
for r in rows:
    k = (r["kind"], r["scenario"])
    if k in seen: continue
    seen.append(k)
    print(f"| {k[0]} | {k[1]} | {med(*k, 'tps'):.0f} | {med(*k, 'p50_us'):.0f} | {med(*k, 'p99_us'):.0f} |")
a = med("ack", "1m", "tps") / med("ack", "empty", "tps")
p = med("probe", "window_plus_10x_history", "p50_us") / med("probe", "window_only", "p50_us")
p_tps = med("probe", "window_only", "tps") / med("probe", "window_plus_10x_history", "tps")
n = med("probe", "history_pkey_probe_no_index", "p50_us") / med("probe", "window_only", "p50_us")
print("\nThe machine is shared with other jobs: differences within about 20% between rounds of one")
print("scenario are noise (see the raw CSV); the ratios compare medians of interleaved rounds.\n")
print("| ratio | value | target |")
print("| --- | --- | --- |")
print(f"| acks/s with 1M hashes in the window / acks/s with an empty window | {a:.2f}x | >= 0.5x |")
print(f"| full-probe push cost (p50 latency) with 10x older history / without | {p:.2f}x | <= 1.2x |")
print(f"| full-probe push cost (1 / tx/s) with 10x older history / without | {p_tps:.2f}x | <= 1.2x |")
c = med("ack", "1m_without_ack_digest", "tps") / med("ack", "empty", "tps")
print(f"| contrast: acks/s at 1M without the ack digest (probe_cache off) / empty window | {c:.2f}x | (no cache) |")
print(f"| contrast: the same history probed by primary key (no created_at index) / without history, p50 | {n:.2f}x | (0.1.0 behaviour) |")
