#!/usr/bin/env python3
"""Analyse one switchover run of bench/ha/switchover.sh: the writer's log (writer.py lines), the
switchovers' command times (`<variant> <i> <t_command> <t_returned>` lines) and the monitor's
events (`<unix time>|<node>|<reported>|<goal>|<description>`). Prints per switchover: command to
last write before the gap, the gap (longest time without a committed write from 1 s before the
command to the command's return + 5 s), command to first write after it, and the monitor's
events relative to the command; then the median per variant."""
import statistics
import sys


def load(path):
    with open(path) as f:
        return [l.rstrip("\n") for l in f if l.strip()]


def main():
    writes, cmds, events = sys.argv[1], sys.argv[2], sys.argv[3]
    oks = []
    for l in load(writes):
        p = l.split()
        if p[0] == "ok":
            oks.append((float(p[1]), p[2]))
    oks.sort()
    ev = []
    for l in load(events):
        p = l.split("|", 4)
        ev.append((float(p[0]), p[1], p[2], p[3], p[4] if len(p) > 4 else ""))
    ev.sort()
    rows = []
    for l in load(cmds):
        variant, i, t0, t1 = l.split()
        t0, t1 = float(t0), float(t1)
        win = [o for o in oks if t0 - 1.0 <= o[0] <= t1 + 5.0]
        if len(win) < 2:
            print("%s #%s: no writes around the switchover" % (variant, i))
            continue
        best = (0.0, None, None)
        for a, b in zip(win, win[1:]):
            if b[0] - a[0] > best[0]:
                best = (b[0] - a[0], a, b)
        gap, a, b = best
        rows.append((variant, gap, a[0] - t0, b[0] - t0, t1 - t0))
        print("%s #%s: command->last write before %.3f s (port %s), gap %.3f s, command->first write after "
              "%.3f s (port %s), command returned after %.3f s"
              % (variant, i, a[0] - t0, a[1], gap, b[0] - t0, b[1], t1 - t0))
        for e in ev:
            if t0 - 0.5 <= e[0] <= t1 + 1.0:
                print("    %+7.3f %-6s reported %-18s goal %-18s %s" % (e[0] - t0, e[1], e[2], e[3], e[4][:110]))
    print()
    print("| variant | switchovers | command->last write (median) | gap (median, min-max) | command->first write after (median) | command returned (median) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for v in sorted(set(r[0] for r in rows), key=lambda v: [r[0] for r in rows].index(v)):
        rs = [r for r in rows if r[0] == v]
        med = lambda k: statistics.median(r[k] for r in rs)
        print("| %s | %d | %.3f s | %.3f s (%.3f-%.3f) | %.3f s | %.3f s |"
              % (v, len(rs), med(2), med(1), min(r[1] for r in rs), max(r[1] for r in rs), med(3), med(4)))


if __name__ == "__main__":
    main()
