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
// 3. Acts from the pages and checks the database with psql: the lagging group moved to the end
//    (Consumers, "Move cursor to now"), a dead letter retried (Messages: the dashboard's retry
//    button is in the message detail of a dead letter), the other purged (DeadLetter, "Purge").
// Output: `ok NAME` / `FAILED NAME: why` per check (run.sh counts them), `note ...` lines.
// Environment: DRIVER_DIR (playwright-core's folder), BASE (the sidecar's URL), SHOTS,
// CHROMIUM, NO_SANDBOX (1 as root), PG* of the seeded database.
import { createRequire } from 'node:module'
import { execFileSync } from 'node:child_process'

const require = createRequire(`${process.env.DRIVER_DIR}/package.json`)
const { chromium } = require('playwright-core')
const BASE = process.env.BASE
const SHOTS = process.env.SHOTS

let failures = 0
const ok = (name) => console.log(`ok ${name}`)
const failed = (name, why) => {
  failures++
  console.log(`FAILED ${name}: ${String(why).replace(/\s+/g, ' ').slice(0, 600)}`)
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

// Wait until every text is in the page (up to 10 s; letter case ignored: the dashboard's CSS
// upper-cases some labels); returns the ones still missing.
async function waitForTexts(page, texts) {
  const want = texts.map((t) => t.toLowerCase())
  try {
    await page.waitForFunction((t) => {
      const body = document.body.innerText.toLowerCase()
      return t.every((x) => body.includes(x))
    }, want, { timeout: 10000 })
    return []
  } catch {
    const body = (await page.evaluate(() => document.body.innerText)).toLowerCase()
    return texts.filter((t, i) => !body.includes(want[i]))
  }
}

// The value shown beside a label (a .stat card's .stat-value), or null.
const statValue = (page, label) => page.evaluate((l) => {
  for (const s of document.querySelectorAll('.stat')) {
    const lab = s.querySelector('.stat-label')
    if (lab && lab.innerText.trim().toLowerCase() === l.toLowerCase()) return (s.querySelector('.stat-value')?.innerText || '').trim()
  }
  return null
}, label)

let shot = 0
const screenshot = async (page, name) => {
  shot++
  await page.screenshot({ path: `${SHOTS}/${String(shot).padStart(2, '0')}-${name}.png`, fullPage: true })
}

// One view: load, requests, texts (after `before`, e.g. a click; then `figures`, checks of
// the figures shown that answer a list of what is wrong), screenshot.
async function checkView(page, name, path, texts, { before = null, figures = null } = {}) {
  const log = await visit(page, path)
  if (before) await before()
  const missing = await waitForTexts(page, texts)
  const wrong = missing.length || !figures ? [] : await figures()
  const { bad, allowed } = failedRequests(log)
  for (const a of allowed) console.log(`note ${name}: ${a.method} ${a.path} answered ${a.status}, not needed: ${a.why}`)
  check(`${name} (${path}): no failed request it depends on, no script error`,
    bad.length === 0 && log.errors.length === 0,
    [...bad.map((r) => `${r.method} ${r.path}${r.query} -> ${r.status || r.failure}`), ...log.errors].join('; '))
  check(`${name} (${path}): shows ${texts.join(', ')}`,
    missing.length === 0 && wrong.length === 0,
    missing.length ? `missing: ${missing.join(', ')}` : wrong.join('; '))
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
    ok('seed through the HTTP API (3 queues, 27 messages, a lagging group, 2 dead letters)')
  } catch (e) {
    failed('seed through the HTTP API', e.message)
    throw e
  }
  const page = await context.newPage()
  page.setDefaultTimeout(10000)
  page.on('dialog', (d) => d.accept())  // confirm() of the dashboard's actions

  // -------------------------------------------------------------- every view of the router
  await checkView(page, 'Dashboard', '/', [Q.orders, Q.payments])
  await checkView(page, 'Queues', '/queues', [Q.orders, Q.payments, Q.events])
  await checkView(page, 'QueueDetail', `/queues/${Q.orders}`, [Q.orders, 'p-0', 'p-1', 'p-2'])
  await checkView(page, 'Messages', `/messages?queue=${Q.orders}`, [Q.orders, 'ord-p-0-0'])
  await checkView(page, 'Consumers', '/consumers', [GROUP, Q.orders])
  await checkView(page, 'DeadLetter', '/dlq', [Q.payments, PAYER, 'card declined'], {
    figures: async () => {
      const total = await statValue(page, 'Total DLQ messages')
      return total === '2' ? [] : [`Total DLQ messages shows ${total}, the database holds 2`]
    },
  })
  await checkView(page, 'Analytics', '/analytics', ['shop', 'fulfil'])
  // System: queen samples no CPU or memory series (the broker's empty answer), and its Postgres
  // tab shows PostgreSQL's statistics of queen's tables for real.
  await checkView(page, 'System', '/system', ['No CPU data available', 'Replicas'])
  const db = psql('SELECT current_database()')
  await checkView(page, 'System-Postgres', '/system', ['Cache Performance', db, 'log_segments', 'log_partitions'], {
    before: () => page.getByRole('button', { name: 'Postgres Stats' }).click(),
  })
  await checkView(page, 'Traces', '/traces', ['Traces'])
  // QueueOperations charts the broker's per-minute operation counters, which queen does not
  // record: the view renders its empty state (no seeded name can appear in it).
  await checkView(page, 'QueueOperations', '/operations', ['Queue Operations'])
  await checkView(page, 'Migration', '/migration', ['Migration'])

  // -------------------------------------------------------------- actions from the pages
  // Consumers: "Move cursor to now" on the lagging group's row; every partition of the queue
  // then has the group's cursor at its last message.
  const behind = `SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
      LEFT JOIN queen.consumer_groups g ON g.partition_id = p.id AND g.group_name = '${GROUP}'
      WHERE q.name = '${Q.orders}' AND p.last_offset >= p.log_start
        AND (g.committed_offset IS NULL OR g.committed_offset < p.last_offset)`
  try {
    const before = psql(behind)
    if (before !== '3') throw new Error(`before the seek ${before} partitions are behind, expected 3`)
    await visit(page, '/consumers').then((l) => l.detach())
    const row = page.locator('[class*="row"]', { hasText: GROUP }).filter({ hasText: Q.orders }).first()
    await row.hover()
    const st = await actAndWait(page, 'POST', new RegExp(`/api/v1/consumer-groups/${GROUP}/queues/${Q.orders}/seek$`),
      () => row.locator('button[title="Move cursor to now (skip pending)"]').click())
    await page.waitForTimeout(500)
    await screenshot(page, 'Consumers-after-seek')
    const after = psql(behind)
    check('Consumers: "Move cursor to now" on the lagging group moves its cursors to the end (psql)',
      st === 200 && after === '0', `seek answered ${st}; ${after} partitions still behind`)
  } catch (e) {
    failed('Consumers: "Move cursor to now" on the lagging group', e.message)
  }

  // Messages: a dead letter's detail, "Retry Message"; its dead-letter row is gone.
  const inDlq = (txn) => psql(`SELECT count(*) FROM queen.consumer_dlq WHERE transaction_id = '${txn}'`)
  try {
    if (inDlq('pay-1') !== '1') throw new Error('pay-1 is not a dead letter before the retry')
    await visit(page, `/messages?queue=${Q.payments}&status=dead_letter`).then((l) => l.detach())
    await page.locator('tr', { hasText: 'pay-1' }).first().click()
    const st = await actAndWait(page, 'POST', /^\/api\/v1\/messages\/[^/]+\/pay-1\/retry$/,
      () => page.getByRole('button', { name: 'Retry Message' }).click())
    await page.waitForTimeout(500)
    await screenshot(page, 'Messages-after-retry')
    const left = inDlq('pay-1')
    check('Messages: "Retry Message" of a dead letter takes it out of the dead-letter queue (psql)',
      st === 200 && left === '0', `retry answered ${st}; pay-1 dead-letter rows: ${left}`)
  } catch (e) {
    failed('Messages: "Retry Message" of a dead letter', e.message)
  }

  // DeadLetter: "Purge" on the other dead letter's row; it is gone from the database.
  try {
    if (inDlq('pay-2') !== '1') throw new Error('pay-2 is not a dead letter before the purge')
    await visit(page, '/dlq').then((l) => l.detach())
    const row = page.locator('tr', { hasText: Q.payments }).first()
    const st = await actAndWait(page, 'DELETE', /^\/api\/v1\/messages\/[^/]+\/pay-2$/,
      () => row.getByRole('button', { name: 'Purge' }).click())
    await page.waitForTimeout(500)
    await screenshot(page, 'DeadLetter-after-purge')
    const left = inDlq('pay-2')
    check('DeadLetter: "Purge" of a dead letter deletes it (psql)', st === 200 && left === '0',
      `purge answered ${st}; pay-2 dead-letter rows: ${left}`)
  } catch (e) {
    failed('DeadLetter: "Purge" of a dead letter', e.message)
  }
} catch (e) {
  failed('browser run', e.stack || e.message)
} finally {
  await browser.close()
}
process.exit(failures ? 1 : 0)
