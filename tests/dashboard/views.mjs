// Queen's dashboard in headless Chromium against queen (run by tests/dashboard/run.sh, which
// builds the dashboard, starts the sidecar serving it and sets the environment below).
//
// 1. Seeds the database through the sidecar's HTTP API, as a user of Queen would: three queues
//    in two namespaces/tasks (one with three partitions), a consumer group that lags (it
//    consumed part of one partition), two dead letters (failed acks past retryLimit).
// 2. Visits every view of the dashboard's router (src/router/index.js), each as a fresh page
//    load: records every request to the sidecar; the view passes when no request it depends on
//    failed (status >= 400 or a network error: the requests a view does not need and may fail
//    are listed in NOT_NEEDED below with their reason, and printed as `note` lines), no script
//    error was thrown, and the seeded names and figures appear in the page. A screenshot of each
//    view goes to SHOTS.
// 3. The groups' offset lag on the Consumers page ("Lagging partitions" at its smallest
//    threshold, 1 minute: waits until the seed is a minute old), and the Dashboard's time lag
//    then (the seed's age).
// 4. Acts from the pages and checks the database with psql, exact values: the lagging group's
//    cursor moved to the end (Consumers, "Move cursor to now"), a dead letter retried (Messages:
//    the retry button is in a dead letter's detail; this DeadLetter view binds its retry to no
//    button), the other purged (DeadLetter, "Purge").
// Output: `ok dashboard: NAME` / `FAILED dashboard: NAME: why` per check (run.sh and
// scripts/test.sh count them), `note ...` lines.
// Environment: DRIVER_DIR (playwright-core's folder), BASE (the sidecar's URL), SHOTS,
// CHROMIUM, NO_SANDBOX (1 as root), PG* of the seeded database.
import { createRequire } from 'node:module'
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'

const require = createRequire(`${process.env.DRIVER_DIR}/package.json`)
const { chromium } = require('playwright-core')
const BASE = process.env.BASE
const SHOTS = process.env.SHOTS

let failures = 0
const ok = (name) => console.log(`ok dashboard: ${name}`)
const failed = (name, why) => {
  failures++
  console.log(`FAILED dashboard: ${name}: ${String(why).replace(/\s+/g, ' ').slice(0, 600)}`)
}
const check = (name, cond, why) => (cond ? ok(name) : failed(name, why))

// One statement through psql (the PG* environment names the seeded database).
const psql = (sql) =>
  execFileSync('psql', ['-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-c', sql], { encoding: 'utf8' }).trim()

// One call of the sidecar's API: {status, json}.
async function api(method, path, body) {
  const r = await fetch(BASE + path, {
    method,
    headers: body ? { 'Content-Type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  })
  const text = await r.text()
  let json = null
  try { json = JSON.parse(text) } catch {}
  return { status: r.status, json, text }
}

// A seeding call that must answer `want`.
async function must(want, method, path, body) {
  const r = await api(method, path, body)
  if (r.status !== want) throw new Error(`${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`)
  return r.json
}

// The failing requests a view does not need, with the reason (matched on method and path).
const NOT_NEEDED = [
  { method: 'GET', path: /^\/api\/me$/, status: 404,
    why: "the Sidebar's probe for an authenticating proxy in front of the dashboard (useProxy): a 404 means there is none, which the Sidebar shows as such" },
]

// ------------------------------------------------------------------ the seed
const Q = { orders: 'dash-orders', payments: 'dash-payments', events: 'dash-events' }
const GROUP = 'dash-billing'
const PAYER = 'dash-payer'

let pushedAt = 0  // when the seed's messages were pushed (the lag panel's minimum is 1 minute)

async function seed() {
  await must(200, 'POST', '/api/v1/configure',
    { queue: Q.orders, namespace: 'shop', task: 'fulfil', options: { leaseTime: 60, retryLimit: 3 } })
  await must(200, 'POST', '/api/v1/configure',
    { queue: Q.payments, namespace: 'shop', task: 'billing', options: { retryLimit: 1 } })
  await must(200, 'POST', '/api/v1/configure', { queue: Q.events, namespace: 'ops', task: 'audit' })
  const items = []
  for (const p of ['p-0', 'p-1', 'p-2'])
    for (let i = 0; i < 7; i++)
      items.push({ queue: Q.orders, partition: p, transactionId: `ord-${p}-${i}`, payload: { order: i, p } })
  for (let i = 1; i <= 5; i++) items.push({ queue: Q.payments, transactionId: `pay-${i}`, payload: { amount: i * 10 } })
  for (let i = 1; i <= 3; i++) items.push({ queue: Q.events, transactionId: `evt-${i}`, payload: { kind: 'audit', i } })
  const pushed = await must(201, 'POST', '/api/v1/push', { items })
  pushedAt = Date.now()
  if (pushed.some((r) => r.status !== 'queued')) throw new Error(`push: ${JSON.stringify(pushed).slice(0, 300)}`)

  // The lagging group: 4 of p-0's 7 messages consumed and acked, nothing else.
  const pop = await must(200, 'GET', `/api/v1/pop/queue/${Q.orders}/partition/p-0?batch=4&consumerGroup=${GROUP}`)
  const acks = pop.messages.map((m) => ({ transactionId: m.transactionId, partitionId: m.partitionId,
    leaseId: pop.leaseId, status: 'completed' }))
  await must(200, 'POST', '/api/v1/ack/batch', { consumerGroup: GROUP, acknowledgments: acks })

  // Two dead letters: pay-1 and pay-2 fail twice (retryLimit 1: the second failure is final).
  for (let n = 0; n < 4; n++) {
    const m = await must(200, 'GET', `/api/v1/pop/queue/${Q.payments}?batch=1&consumerGroup=${PAYER}`)
    const msg = m.messages[0]
    const r = await must(200, 'POST', '/api/v1/ack', { transactionId: msg.transactionId, partitionId: msg.partitionId,
      leaseId: m.leaseId, status: 'failed', error: 'card declined', consumerGroup: PAYER })
    if (r[0].success !== true) throw new Error(`nack: ${JSON.stringify(r)}`)
  }
  const dlq = psql('SELECT count(*) FROM queen.consumer_dlq')
  if (dlq !== '2') throw new Error(`expected 2 dead letters after the seed, the database holds ${dlq}`)
  const retries = psql('SELECT string_agg(retry_count::text, \',\') FROM queen.consumer_dlq')
  if (retries !== '1,1') throw new Error(`expected retry counts 1,1 in the dead letters, the database holds ${retries}`)
}

// ------------------------------------------------------------------ the browser
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM,
  headless: true,
  args: [...(process.env.NO_SANDBOX === '1' ? ['--no-sandbox'] : []), '--disable-dev-shm-usage'],
})
const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, timezoneId: 'UTC', locale: 'en-US' })
// The dashboard's index.html links Google's fonts: no network here, so they are refused at
// once (the page falls back to local fonts) instead of waiting for a timeout.
await context.route((url) => !url.href.startsWith(BASE), (route) => route.abort())

// Load one view and wait until its requests settled (no request to the sidecar in flight for
// 800 ms, at most 20 s); returns the requests it made and the script errors it threw.
async function visit(page, path) {
  const log = { requests: [], errors: [] }
  let inflight = 0
  let last = Date.now()
  const mine = (req) => req.url().startsWith(BASE)
  const onReq = (req) => { if (mine(req)) { inflight++; last = Date.now() } }
  const done = (req, status, failure) => {
    if (!mine(req)) return
    inflight = Math.max(0, inflight - 1)
    last = Date.now()
    const u = new URL(req.url())
    log.requests.push({ method: req.method(), path: u.pathname, query: u.search, status, failure })
  }
  const onFinished = async (req) => {
    const r = await req.response()
    done(req, r ? r.status() : 0, null)
  }
  const onFailed = (req) => done(req, 0, req.failure()?.errorText || 'failed')
  const onError = (err) => log.errors.push(String(err))
  page.on('request', onReq)
  page.on('requestfinished', onFinished)
  page.on('requestfailed', onFailed)
  page.on('pageerror', onError)
  await page.goto(BASE + path, { waitUntil: 'load', timeout: 30000 })
  const deadline = Date.now() + 20000
  while (Date.now() < deadline && (inflight > 0 || Date.now() - last < 800)) await page.waitForTimeout(100)
  log.detach = () => {
    page.off('request', onReq)
    page.off('requestfinished', onFinished)
    page.off('requestfailed', onFailed)
    page.off('pageerror', onError)
  }
  return log
}

// The failed requests of a log, split into the ones the view needs and the listed others.
function failedRequests(log) {
  const bad = [], allowed = []
  for (const r of log.requests) {
    if (r.status > 0 && r.status < 400) continue
    const known = NOT_NEEDED.find((n) => n.method === r.method && n.path.test(r.path) && n.status === r.status)
    ;(known ? allowed : bad).push({ ...r, why: known?.why })
  }
  return { bad, allowed }
}

// Text as the checks compare it: letter case ignored (the dashboard's CSS upper-cases some
// labels), every run of white space one space, no space around a "·" (the views' separators).
const norm = (t) => t.toLowerCase().replace(/\s+/g, ' ').replace(/ ?· ?/g, '·').trim()

// Wait until every text is in the page (up to 10 s); returns the ones still missing. A text is
// a string (normalized as above) or a RegExp matched against the normalized page (lower case,
// "·" without spaces around it): for a phrase holding a figure that depends on the clock.
async function waitForTexts(page, texts) {
  const want = texts.map((t) => (t instanceof RegExp ? { re: t.source } : { s: norm(t) }))
  const fn = norm.toString()
  const has = (body, w) => (w.re ? new RegExp(w.re).test(body) : body.includes(w.s))
  try {
    await page.waitForFunction(([t, f, h]) => {
      const n = eval(f), hit = eval(h)
      const body = n(document.body.innerText)
      return t.every((x) => hit(body, x))
    }, [want, fn, has.toString()], { timeout: 10000 })
    return []
  } catch {
    const body = norm(await page.evaluate(() => document.body.innerText))
    return texts.filter((t, i) => !has(body, want[i]))
  }
}

// The normalized text of every table row holding `text` (a transactionId, a group).
const rowsWith = (page, text) => page.evaluate((t) =>
  [...document.querySelectorAll('tr, [class*="row"]')].filter((r) => r.innerText.includes(t))
    .map((r) => r.innerText), text).then((rows) => rows.map(norm))

// Expect every row of `want` ({text: [phrases]}) to exist with each phrase; a list of what is wrong.
async function rowChecks(page, want) {
  const wrong = []
  for (const [text, phrases] of Object.entries(want)) {
    const rows = await rowsWith(page, text)
    if (!rows.some((r) => phrases.every((p) => r.includes(norm(p)))))
      wrong.push(`no row with ${text} showing ${phrases.join(', ')} (rows: ${rows.slice(0, 2).join(' | ') || 'none'})`)
  }
  return wrong
}

// A screenshot of the page and its text (NN-name.png, NN-name.txt: what the checks read).
let shot = 0
const screenshot = async (page, name) => {
  shot++
  const base = `${SHOTS}/${String(shot).padStart(2, '0')}-${name}`
  await page.screenshot({ path: `${base}.png`, fullPage: true })
  writeFileSync(`${base}.txt`, await page.evaluate(() => document.body.innerText))
}

// One view: load, requests, texts (after `before`, e.g. a click; then `figures`, checks of
// the figures shown that answer a list of what is wrong), screenshot.
async function checkView(page, name, path, texts, { before = null, figures = null } = {}) {
  const log = await visit(page, path)
  if (before) await before()
  const missing = await waitForTexts(page, texts)
  const wrong = missing.length || !figures ? [] : await figures()
  // A field missing or of the wrong type shows as one of these in a Vue template.
  const junk = (await page.evaluate(() => document.body.innerText)).match(/\bNaN\b|\bundefined\b|Invalid Date|\[object Object\]/g)
  if (junk) wrong.push(`the page shows ${[...new Set(junk)].join(', ')}`)
  const { bad, allowed } = failedRequests(log)
  for (const a of allowed) console.log(`note ${name}: ${a.method} ${a.path} answered ${a.status}, not needed: ${a.why}`)
  check(`${name} (${path}): no failed request it depends on, no script error`,
    bad.length === 0 && log.errors.length === 0,
    [...bad.map((r) => `${r.method} ${r.path}${r.query} -> ${r.status || r.failure}`), ...log.errors].join('; '))
  check(`${name} (${path}): shows ${texts.join(', ')}`,
    missing.length === 0 && wrong.length === 0,
    [missing.length ? `missing: ${missing.join(', ')}` : '', ...wrong].filter(Boolean).join('; '))
  await screenshot(page, name)
  log.detach()
  return log
}

// Click what `click` finds while waiting for the API answer it sends (method, path pattern):
// answers that response's status, or throws naming what did not happen.
async function actAndWait(page, method, pathRe, click) {
  const wait = page.waitForResponse((r) => r.request().method() === method &&
    pathRe.test(new URL(r.url()).pathname), { timeout: 15000 })
  await click()
  const r = await wait
  return r.status()
}

try {
  try {
    await seed()
    ok('seed through the HTTP API (3 queues, 29 messages, a lagging group, 2 dead letters)')
  } catch (e) {
    failed('seed through the HTTP API', e.message)
    throw e
  }
  const page = await context.newPage()
  page.setDefaultTimeout(10000)
  page.on('dialog', (d) => d.accept())  // confirm() of the dashboard's actions

  // -------------------------------------------------------------- every view of the router
  // The figures the seed implies. configure creates each queue's "Default" partition, so
  // dash-orders has 4 partitions (Default, empty, and p-0..p-2 of 7 messages each): 21 messages,
  // dash-payments 5 in 1, dash-events 3 in 1: 29 messages, 6 partitions. dash-billing consumed
  // 4 (p-0's offsets 0..3): 4 completed, 17 pending; dash-payer's 2 dead letters leave 3 pending;
  // dash-events has no reader: 3 pending. 23 pending in all.
  await checkView(page, 'Dashboard', '/', [
    '29 messages · 3 queues · 6 partitions · 2 consumer groups · 23 pending · 4 completed',
    // Between a queue's name and its pending count: its groups' worst time lag in seconds, "—"
    // while under 1 s (the clock's: not asserted); dash-events has no group.
    new RegExp(`${Q.orders} (—|[^ ]+) 17 pending·4 parts`), 'dash-events — 3 pending · 1 part',
    new RegExp(`${Q.payments} (—|[^ ]+) 3 pending·1 part`),
    'Consumer groups by lag 2 total · 2 lagging',
    `${GROUP} · 1 member · 1 lagging`, `${PAYER} · 1 member · 1 lagging`,
    // The overview's time lag (avg / max, seconds): every pending partition's oldest pending
    // message came with the seed's one push, so both are its age.
    /time lag (\d+)s\/\1s/,
  ], {
    figures: async () => {
      const body = norm(await page.evaluate(() => document.body.innerText))
      const age = Number(body.match(/time lag (\d+)s\/\1s/)[1])
      const most = Math.floor((Date.now() - pushedAt) / 1000) + 1
      return age <= most ? [] : [`time lag ${age} s, the seed was pushed at most ${most} s ago`]
    },
  })
  await checkView(page, 'Queues', '/queues', [
    'All namespaces ops shop', 'All tasks audit billing fulfil',
    `${Q.events} 3.0 msg/p · 0 /s — 1 parts`, `${Q.payments} 5.0 msg/p · 0 /s — 1 parts`,
    `${Q.orders} 5.3 msg/p · 0 /s — 4 parts`,
  ])
  await checkView(page, 'QueueDetail', `/queues/${Q.orders}`, [
    `${Q.orders} shop · fulfil · 4 partitions`,
    '17 pending · 0 processing · 4 completed · 0 failed · 0 dlq · 21 total · 4 partitions',
    'Consumed 4msgs', 'LEASE TIME 1m', 'RETRY LIMIT 3',
  ])
  await checkView(page, 'QueueDetail-payments', `/queues/${Q.payments}`, [
    `${Q.payments} shop · billing · 1 partition`,
    '3 pending · 0 processing · 0 completed · 0 failed · 2 dlq · 5 total · 1 partition',
    'RETRY LIMIT 1',
  ])
  // Messages of dash-orders: 21, p-0's first four completed by dash-billing (1 of its 1 group),
  // the rest pending.
  await checkView(page, 'Messages', `/messages?queue=${Q.orders}`, ['21 loaded', 'Bus Mode Active 1 consumer group(s)'], {
    figures: async () => [
      ...await rowChecks(page, {
        'ord-p-0-0': [Q.orders, 'p-0', 'completed', '1/1 groups'],
        'ord-p-0-3': ['completed', '1/1 groups'],
        'ord-p-0-4': ['pending', '0/1 groups'],
        'ord-p-1-6': ['p-1', 'pending'],
        'ord-p-2-0': ['p-2', 'pending'],
      }),
      ...await page.evaluate(() => {
        const rows = [...document.querySelectorAll('tbody tr')].map((r) => r.innerText)
        const done = rows.filter((r) => /\bcompleted\b/.test(r)).length
        const pend = rows.filter((r) => /\bpending\b/.test(r)).length
        return done === 4 && pend === 17 ? [] : [`${done} completed and ${pend} pending rows, the seed implies 4 and 17`]
      }),
    ],
  })
  // Consumers: each group on its queue, 1 partition with a position, lagging.
  await checkView(page, 'Consumers', '/consumers', [
    `${GROUP} · ${Q.orders} 1 parts 1 behind`, `${PAYER} · ${Q.payments} 1 parts 1 behind`,
  ])
  // DeadLetter: pay-1 and pay-2, failed twice with retryLimit 1 (the retry count the ack path
  // records: 1). Top error: status' topErrors, both dead letters' error (the broker answers []
  // there: its view reads None).
  await checkView(page, 'DeadLetter', '/dlq', [
    'TOTAL DLQ MESSAGES 2 AFFECTED PARTITIONS 1 TOP ERROR card declined',
    'Top errors 1 distinct 2 card declined', '2 of 2 messages',
  ], {
    figures: () => rowChecks(page, {
      'pay-1': [Q.payments, PAYER, 'card declined 1'],
      'pay-2': [Q.payments, PAYER, 'card declined 1'],
    }),
  })
  await checkView(page, 'Analytics', '/analytics', [
    'NAMESPACE All Namespaces ops shop', 'TASK All Tasks audit billing fulfil',
    'TOTAL 29 PENDING 23 PROCESSING 0 COMPLETED 4 FAILED 0 DEAD LETTER 2',
    'Active Leases 0 Partitions with Leases 0 Total Batch Size 0 Total Acked 0',
    'Dead Letter Queue Total Messages 2 Affected Partitions 1',
  ])
  // System: queen samples no CPU or memory series (the broker's empty answer), and its Postgres
  // tab shows PostgreSQL's statistics of queen's tables for real.
  await checkView(page, 'System', '/system', ['No CPU data available', 'REPLICAS 0 DATA POINTS 0'])
  const db = psql('SELECT current_database()')
  await checkView(page, 'System-Postgres', '/system', ['Cache Performance', db, 'log_segments', 'log_partitions', 'consumer_dlq'], {
    before: () => page.getByRole('button', { name: 'Postgres Stats' }).click(),
  })
  // Traces: queen keeps no trace (POST /api/v1/traces is accepted, not stored:
  // docs/queen-compatibility.md), so a search from the page finds none, as the view says.
  await checkView(page, 'Traces', '/traces', ['No traces found for: dash-order-flow'], {
    before: async () => {
      await page.getByPlaceholder(/Enter trace name/).fill('dash-order-flow')
      await actAndWait(page, 'GET', /^\/api\/v1\/traces\/by-name\/dash-order-flow$/,
        () => page.getByPlaceholder(/Enter trace name/).press('Enter'))
    },
  })
  // QueueOperations charts the broker's per-minute operation counters, which queen does not
  // record: the view renders its empty state (no seeded name can appear in it).
  await checkView(page, 'QueueOperations', '/operations', ['No throughput data available', 'No per-queue metrics recorded yet'])
  await checkView(page, 'Migration', '/migration', ['Push Maintenance OFF Pop Maintenance OFF'])

  // Consumers, "Lagging partitions" at its smallest threshold (1 minute: the check waits until the
  // seeded messages are a minute old): the offset lag of each group where it has a position,
  // dash-billing on p-0 (7 messages, 4 consumed: 3) and dash-payer on dash-payments' Default
  // (5 messages, 2 dead-lettered: 3); no lease is held, so no worker.
  try {
    const wait = pushedAt + 62000 - Date.now()
    if (wait > 0) await page.waitForTimeout(wait)
    const log = await visit(page, '/consumers')
    // the wait is armed before the click: a response that arrives first is not missed
    const opened = page.waitForResponse((r) => new URL(r.url()).pathname === '/api/v1/consumer-groups/lagging', { timeout: 10000 })
    await page.locator('button.lp-head').click()
    await opened
    const st = await actAndWait(page, 'GET', /^\/api\/v1\/consumer-groups\/lagging$/,
      () => page.locator('.lp-head-meta .seg button', { hasText: /^1m$/ }).click())
    const shown = await waitForTexts(page, ['2 partitions above 1 minute'])
    const rows = await page.evaluate(() => [...document.querySelectorAll('table.lp-table tbody tr')]
      .map((r) => [...r.querySelectorAll('td')].slice(0, 5).map((c) => c.innerText.trim()).join('|')).sort())
    const want = [`${GROUP}|${Q.orders}|p-0|—|3`, `${PAYER}|${Q.payments}|Default|—|3`]
    await screenshot(page, 'Consumers-lagging')
    const { bad } = failedRequests(log)
    log.detach()
    check('Consumers: "Lagging partitions" above 1m shows each group\'s offset lag (dash-billing p-0: 3, dash-payer Default: 3)',
      st === 200 && shown.length === 0 && bad.length === 0 && JSON.stringify(rows) === JSON.stringify(want),
      `lagging answered ${st}; rows ${JSON.stringify(rows)}, expected ${JSON.stringify(want)}; ${shown.join(', ')} ` +
      bad.map((r) => `${r.method} ${r.path} -> ${r.status || r.failure}`).join('; '))
  } catch (e) {
    failed('Consumers: "Lagging partitions" above 1m', e.message)
  }

  // Dashboard, the seed now over a minute old: the overview's time lag (avg / max) is the seed's
  // age on both sides, shown as "1m Ns" (every pending partition's oldest message came with the
  // seed's one push).
  try {
    const lo = Math.floor((Date.now() - pushedAt) / 1000) - 1
    const log = await visit(page, '/')
    const shown = await waitForTexts(page, [/time lag 1m( \d+s)?\/1m( \d+s)?/])
    const hi = Math.floor((Date.now() - pushedAt) / 1000) + 1
    const body = norm(await page.evaluate(() => document.body.innerText))
    const m = body.match(/time lag (1m(?: (\d+)s)?)\/(1m(?: \d+s)?)/)
    const age = m ? 60 + Number(m[2] || 0) : -1
    await screenshot(page, 'Dashboard-a-minute-on')
    log.detach()
    check('Dashboard: the time lag a minute after the seed is its age, avg = max',
      shown.length === 0 && m !== null && m[1] === m[3] && age >= lo && age <= hi,
      `shows ${m ? m[0] : 'no time lag of a minute'}; the seed is ${lo + 1} to ${hi - 1} s old`)
  } catch (e) {
    failed('Dashboard: the time lag a minute after the seed', e.message)
  }

  // -------------------------------------------------------------- actions from the pages
  // Consumers: "Move cursor to now" on the lagging group's row. The broker's rule (and queen's,
  // docs/queen-compatibility.md): the cursor moves on the partitions where the group has a
  // position, here p-0 from offset 3 (4 consumed) to 6, its last; p-1 and p-2, never popped by
  // the group, keep no position.
  const cursors = `SELECT string_agg(p.name || '=' || coalesce(g.committed_offset::text, 'none'), ',' ORDER BY p.name)
      FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
      LEFT JOIN queen.consumer_groups g ON g.partition_id = p.id AND g.group_name = '${GROUP}'
      WHERE q.name = '${Q.orders}'`
  try {
    const before = psql(cursors)
    if (before !== 'Default=none,p-0=3,p-1=none,p-2=none') throw new Error(`before the seek the cursors are ${before}`)
    await visit(page, '/consumers').then((l) => l.detach())
    const row = page.locator('[class*="row"]', { hasText: GROUP }).filter({ hasText: Q.orders }).first()
    await row.hover()
    const st = await actAndWait(page, 'POST', new RegExp(`/api/v1/consumer-groups/${GROUP}/queues/${Q.orders}/seek$`),
      () => row.locator('button[title="Move cursor to now (skip pending)"]').click())
    const shown = await waitForTexts(page, [`${GROUP} · ${Q.orders} 1 parts — —`])
    await screenshot(page, 'Consumers-after-seek')
    const after = psql(cursors)
    check('Consumers: "Move cursor to now" on the lagging group moves its cursor on p-0 from 3 to 6 (psql), no longer lagging',
      st === 200 && after === 'Default=none,p-0=6,p-1=none,p-2=none' && shown.length === 0,
      `seek answered ${st}; cursors ${after}; ${shown.length ? 'the row does not show it caught up' : ''}`)
  } catch (e) {
    failed('Consumers: "Move cursor to now" on the lagging group', e.message)
  }

  // Messages: a dead letter's detail, "Retry Message" (the DeadLetter view of this dashboard
  // version offers only Purge: its retryMessage is bound to no button). The dead-letter row is
  // deleted and its payload appended to the partition as pay-1.retry-<dead-letter id>, pending.
  const inDlq = (txn) => psql(`SELECT count(*) FROM queen.consumer_dlq WHERE transaction_id = '${txn}'`)
  const payLast = `SELECT queen.log_end(p.id, p.last_offset) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
      WHERE q.name = '${Q.payments}' AND p.name = 'Default'`
  try {
    if (inDlq('pay-1') !== '1') throw new Error('pay-1 is not a dead letter before the retry')
    const dlqId = psql(`SELECT id FROM queen.consumer_dlq WHERE transaction_id = 'pay-1'`)
    const lastBefore = psql(payLast)
    if (lastBefore !== '4') throw new Error(`dash-payments' last offset is ${lastBefore} before the retry, expected 4`)
    await visit(page, `/messages?queue=${Q.payments}&status=dead_letter`).then((l) => l.detach())
    await page.locator('tr', { hasText: 'pay-1' }).first().click()
    const st = await actAndWait(page, 'POST', /^\/api\/v1\/messages\/[^/]+\/pay-1\/retry$/,
      () => page.getByRole('button', { name: 'Retry Message' }).click())
    await page.waitForTimeout(500)
    await screenshot(page, 'Messages-after-retry')
    const left = inDlq('pay-1')
    const lastAfter = psql(payLast)
    const copy = psql(`SELECT (m->>'offset') || ' ' || (m->>'status') FROM queen.log_partitions p
        JOIN queen.queues q ON q.id = p.queue_id,
        LATERAL queen.admin_message(queen.partition_uuid(p.id)::text, 'pay-1.retry-${dlqId}') m
        WHERE q.name = '${Q.payments}' AND p.name = 'Default'`)
    check('Messages: "Retry Message" of a dead letter deletes its dead-letter row and appends pay-1.retry-N at offset 5, pending (psql)',
      st === 200 && left === '0' && lastAfter === '5' && copy === '5 pending',
      `retry answered ${st}; pay-1 dead-letter rows ${left}; last offset ${lastAfter}; the copy: ${copy || 'none'}`)
  } catch (e) {
    failed('Messages: "Retry Message" of a dead letter', e.message)
  }

  // DeadLetter: "Purge" on the other dead letter's row; it is gone from the database, no dead
  // letter is left, and the page shows none.
  try {
    if (inDlq('pay-2') !== '1') throw new Error('pay-2 is not a dead letter before the purge')
    await visit(page, '/dlq').then((l) => l.detach())
    const row = page.locator('tr', { hasText: 'pay-2' }).first()
    const st = await actAndWait(page, 'DELETE', /^\/api\/v1\/messages\/[^/]+\/pay-2$/,
      () => row.getByRole('button', { name: 'Purge' }).click())
    const shown = await waitForTexts(page, ['TOTAL DLQ MESSAGES 0', '0 of 0 messages'])
    await screenshot(page, 'DeadLetter-after-purge')
    const left = inDlq('pay-2')
    const all = psql('SELECT count(*) FROM queen.consumer_dlq')
    check('DeadLetter: "Purge" of a dead letter deletes it (psql: 0 dead letters left), the page shows 0',
      st === 200 && left === '0' && all === '0' && shown.length === 0,
      `purge answered ${st}; pay-2 dead-letter rows ${left}, all ${all}; page missing ${shown.join(', ')}`)
  } catch (e) {
    failed('DeadLetter: "Purge" of a dead letter', e.message)
  }
} catch (e) {
  failed('browser run', e.stack || e.message)
} finally {
  await browser.close()
}
process.exit(failures ? 1 : 0)
