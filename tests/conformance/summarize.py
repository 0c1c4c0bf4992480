#!/usr/bin/env python3
"""Summarise a vitest JSON report of the Durable Streams conformance suite.

Prints one line `conformance: N passed, N failed, N skipped (N known failures)` and every
failing test; exits 1 when a test failed that KNOWN_FAILURES.md does not list.
Usage: summarize.py REPORT.json KNOWN_FAILURES.md
"""
import json
import re
import sys

report = json.load(open(sys.argv[1]))
known = set()
for line in open(sys.argv[2], encoding="utf-8"):
    m = re.match(r"^- `(.+?)`", line.strip())
    if m:
        known.add(m.group(1))

passed, failed, skipped, unexpected, expected = 0, 0, 0, [], []
for f in report.get("testResults", []):
    for a in f.get("assertionResults", []):
        name = " > ".join(a.get("ancestorTitles", []) + [a.get("title", "")])
        st = a.get("status")
        if st == "passed":
            passed += 1
        elif st == "failed":
            failed += 1
            (expected if name in known else unexpected).append(name)
        else:
            skipped += 1
if not report.get("testResults"):
    print("conformance: no test results (the suite did not run)")
    sys.exit(1)
print(f"conformance: {passed} passed, {failed} failed, {skipped} skipped "
      f"({len(expected)} known failures)")
for n in expected:
    print(f"  known failure: {n}")
for n in unexpected:
    print(f"  FAILED: {n}")
sys.exit(1 if unexpected else 0)
