"""The load the fault campaigns share (imported, not run; used by campaign.py,
cluster_campaign.py and failover_campaign.py): request items with transactionIds recorded as
sent, the resend-until-answered loop every client runs, and the HTTP client pushing through
sidecars.

A request that is not answered (no answer, 429, 503, an item answered `failed` with a retryable
code; for SQL an error) is sent again unchanged until it is, or until args.answer_deadline_s
passes (then it counts as unanswered, a violation). Every answer goes to the History
(history.py), which the checker reads back.
"""
import http.client
import json
import time

from history import canon

# Per-item error codes a client answers by sending the request again (the cluster campaign adds
# shard_unavailable).
RETRY_CODES = frozenset({"outcome_unknown", "unavailable", "busy"})

# How an HTTP client paces itself: its answer timeout and the random pauses (seconds) after a
# connection error and after 429/503. The sidecar campaigns' pace; the failover campaign's is
# slower (FAILOVER_PACE in failover_campaign.py).
SIDECAR_PACE = {"timeout": 30, "error_pause": (0.02, 0.1), "busy_pause": (0.05, 0.2)}


def items_for(cid, r, args, hist, rng, auto_share=0.0):
    """Request r of client cid: 1..args.max_items items over 1..3 random partitions, recorded in
    hist as sent. An item repeats an earlier (partition, transactionId) with chance 0.20, else
    gets a new transactionId c<cid>-r<r>-k<k>; with chance auto_share it carries none (then it
    is a new message on every send, counted per attempt by the client)."""
    items = []
    parts = rng.sample(range(args.partitions), rng.randint(1, min(3, args.partitions)))
    for k in range(rng.randint(1, args.max_items)):
        p = "p%d" % rng.choice(parts)
        payload = {"c": cid, "r": r, "k": k}
        x = rng.random()
        with hist.lock:
            if x < auto_share:
                hist.auto_sent[canon(payload)] = 0
                items.append({"queue": args.queue, "partition": p, "payload": payload})
                continue
            if x < 0.20 and hist.known:
                p, txn = rng.choice(hist.known)
            else:
                txn = "c%d-r%d-k%d" % (cid, r, k)
                hist.known.append((p, txn))
            hist.sent.setdefault((p, txn), set()).add(canon(payload))
        items.append({"queue": args.queue, "partition": p, "payload": payload, "transactionId": txn})
    return items


def send_until_answered(hist, deadline_s, what, attempt):
    """One request: counted, then attempt() (each call counted as an attempt) until it returns
    None (answered). attempt() returns a text saying what it got when the request must be sent
    again (it pauses itself first). After deadline_s the request counts as unanswered, with
    `what` (e.g. "http ['p1']"), when it was first sent and what its last attempt got."""
    with hist.lock:
        hist.requests += 1
    first = time.time()
    give_up = first + deadline_s
    last = "no attempt"
    while True:
        if time.time() > give_up:
            with hist.lock:
                hist.unanswered += 1
                hist.unanswered_info.append("%s sent at %.0f s, last: %s" % (what, first - hist.t0, last))
            return
        with hist.lock:
            hist.attempts += 1
        last = attempt(first)
        if last is None:
            return


def http_client(cid, args, sidecars, hist, stop, rng, auto_share=0.05, retry_codes=RETRY_CODES,
                pace=SIDECAR_PACE, on_answered=None, on_attempt=None, make_items=items_for):
    """Client cid until stop is set: requests of make_items() (items_for() unless given, same
    arguments) POSTed to /api/v1/push of a random sidecar (each attempt picks one), resent
    unchanged until every item is answered. Answers `queued`/`duplicate` go to hist.answers; an
    item `failed` with a code outside retry_codes, or a status other than 201/429/503, is a bad
    answer. on_answered(first, t0, t1, answers), when given, hears of each request's final 201
    (first send, that attempt's start, its answer); on_attempt(t0, t1, items, status, answers),
    when given, of every attempt (status 0 and answers None for no answer, answers None unless
    201)."""
    r = 0
    while not stop.is_set():
        items = make_items(cid, r, args, hist, rng, auto_share)
        body = json.dumps({"items": items})
        r += 1

        def attempt(first):
            sc = rng.choice(sidecars)
            with hist.lock:
                for it in items:
                    if "transactionId" not in it:
                        hist.auto_sent[canon(it["payload"])] += 1
            t0 = time.time()
            try:
                c = http.client.HTTPConnection("127.0.0.1", sc.port, timeout=pace["timeout"])
                c.request("POST", "/api/v1/push", body, {"Content-Type": "application/json"})
                resp = c.getresponse()
                status, data = resp.status, resp.read()
                c.close()
            except (OSError, http.client.HTTPException) as e:
                if on_attempt:
                    on_attempt(t0, time.time(), items, 0, None)
                time.sleep(rng.uniform(*pace["error_pause"]))
                return "%s from sidecar %s" % (type(e).__name__, sc.port)
            last = "%s %s" % (status, data[:160])
            if on_attempt:
                on_attempt(t0, time.time(), items, status, json.loads(data) if status == 201 else None)
            if status in (429, 503):
                time.sleep(rng.uniform(*pace["busy_pause"]))
                return last
            if status != 201:
                with hist.lock:
                    hist.bad_answers.append((status, data[:300]))
                time.sleep(0.1)
                return last
            t1 = time.time()
            ans = json.loads(data)
            retry = False
            with hist.lock:
                for it, a in zip(items, ans):
                    if a["status"] == "failed":
                        retry = True
                        if a.get("code") not in retry_codes:
                            hist.bad_answers.append((201, json.dumps(a)[:300]))
                        continue
                    hist.answers.append((it["partition"], a["transaction_id"], a["status"],
                                         a["message_id"], a["offset"]))
            if retry:
                time.sleep(rng.uniform(0.05, 0.2))
                return last
            if on_answered:
                on_answered(first, t0, t1, ans)
            return None

        send_until_answered(hist, args.answer_deadline_s,
                            "http %s" % sorted({it["partition"] for it in items}), attempt)
