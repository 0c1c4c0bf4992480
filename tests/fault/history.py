"""The history the fault campaigns record and the checker they share (imported, not run; used by
campaign.py, cluster_campaign.py and failover_campaign.py).

History: what clients sent (per partition and transactionId, the payloads; the payloads sent
without a transactionId and how many attempts carried each), every answer (`queued` or
`duplicate`, with its message id and offset), request and attempt counts, the requests never
answered and the answers that break the protocol.

The checker asserts over the stored copies, {(partition, transactionId): [(offset, id, payload)]}:
  1. every message answered `queued` is stored (at the answered offset, with the answered id);
  2. no transactionId is stored twice in a partition (a campaign is shorter than the window);
  3. every answer for a transactionId (`queued` or `duplicate`) names the stored copy's message
     id and offset;
  4. nothing is stored that no client sent (transactionId and payload); a message sent without
     a transactionId is a new message on every send (Queen's rule: its transactionId is its own
     message id), so each stored copy has transactionId == message id and it is stored at most
     once per attempt that carried it;
  5. every request got an answer, and no answer broke the protocol.
A campaign that checks more (the cluster's placement of each partition on its shard, the
failover's rotation and streams) does so itself.
"""
import json
import subprocess
import threading
import time


def canon(v):
    """A payload's canonical JSON text (what is compared between sent and stored)."""
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


class History:
    """What the clients sent and were answered (see the module's docstring); guarded by lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.t0 = time.time()
        self.answers = []      # (partition, txn, status, id, offset)
        self.sent = {}         # (partition, txn) -> set of canonical payloads
        self.auto_sent = {}    # canonical payload sent without a transactionId -> attempts carrying it
        self.known = []        # (partition, txn) sent so far, for repeats
        self.requests = 0
        self.attempts = 0
        self.unanswered = 0
        self.unanswered_info = []  # what each unanswered request last got, for the report
        self.bad_answers = []  # protocol violations seen by clients (400, 500, malformed)


def check_stored(stored, hist, violations):
    """Checks 2 and 4: the stored copies against what was sent. A transactionId is stored once;
    an item sent without one is a new message each send (Queen's rule), so it is stored at most
    once per attempt that carried it, with its message id as its transactionId; every payload is
    one a client sent."""
    auto_seen = {}
    for (p, t), copies in stored.items():
        if len(copies) > 1:
            violations.append("transactionId %s stored %d times in %s" % (t, len(copies), p))
        for _, mid, payload in copies:
            if (p, t) not in hist.sent and payload in hist.auto_sent:
                auto_seen[payload] = auto_seen.get(payload, 0) + 1  # sent without transactionId
                if t != mid:
                    violations.append("a message without transactionId stored with transactionId "
                                      "%s, not its message id %s" % (t, mid))
            elif payload not in hist.sent.get((p, t), ()):
                violations.append("stored %s/%s with a payload no client sent" % (p, t))
    for payload, n in auto_seen.items():
        if n > hist.auto_sent[payload]:
            violations.append("a message without transactionId was stored %d times in %d sends: %s"
                              % (n, hist.auto_sent[payload], payload))


def check_answers(stored, hist, violations):
    """Checks 1, 3 and 5: every answer names a stored copy (its id and offset), every request
    was answered, no answer broke the protocol. Returns how many answers were `queued`."""
    queued = 0
    for p, t, status, mid, off in hist.answers:
        queued += status == "queued"
        copies = stored.get((p, t))
        if not copies:
            violations.append("answered %s but not stored: %s/%s" % (status, p, t))
            continue
        if (copies[0][0], copies[0][1]) != (off, mid):
            violations.append("answer %s for %s/%s names %s@%s, stored %s@%s" %
                              (status, p, t, mid, off, copies[0][1], copies[0][0]))
    if hist.unanswered:
        violations.append("%d requests never answered: %s" % (hist.unanswered, hist.unanswered_info[:10]))
    for st, body in hist.bad_answers:
        violations.append("unexpected answer %s: %s" % (st, body))
    return queued


def read_log(sql, queue, partitions):
    """The stored copies of partitions p0..p<partitions-1> of queue, read with queen.read through
    sql(query) (a partition never created is skipped): (stored, rows)."""
    stored = {}  # (partition, txn) -> [(offset, id, payload)]
    rows = 0
    for i in range(partitions):
        p = "p%d" % i
        q = ("SELECT coalesce(json_agg(json_build_object('o', message_offset, 'id', message_id, "
             "'t', transaction_id, 'p', payload) ORDER BY message_offset), '[]') "
             "FROM queen.read('%s', '%s', 0, 100000000)" % (queue, p))
        try:
            out = sql(q)
        except subprocess.CalledProcessError as e:
            if "does not exist" in (e.stderr or ""):
                continue
            raise
        for row in json.loads(out or "[]"):
            rows += 1
            stored.setdefault((p, row["t"]), []).append((row["o"], row["id"], canon(row["p"])))
    return stored, rows


def check(db, args, hist):
    """The whole check over one server (db.sql runs a query there; args.queue, args.partitions):
    (violations, messages stored, answers `queued`)."""
    violations = []
    stored, rows = read_log(db.sql, args.queue, args.partitions)
    check_stored(stored, hist, violations)
    queued = check_answers(stored, hist, violations)
    return violations, rows, queued
