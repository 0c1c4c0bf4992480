// Every method of Queen's JavaScript client's admin API (client.admin, client-v2/admin/Admin.js)
// against the real sidecar over HTTP, with exact answers. The client is Queen's own, imported
// from the scratch copy tests/queen_client/run.sh makes (build/queen-client/suite); nothing of
// it is copied here. The state is seeded with the same client: three queues (one with a
// namespace and a task) with partitions and pushes, a consumer group that lags, a lease in
// queue mode, nacks to the dead-letter queue under retryLimit, a group that consumed
// everything. Then the reads are asserted (fields, values, counts), and the actions by their
// effect (a seek then the messages consumed again, a retried dead letter delivered once, a
// group deleted on a queue then consumed again, maintenance mode on, a push parked, off, the
// push delivered). Calls answered with a 4xx by design assert that status (error.status, which
// the client throws) and the body's stable code (read with a plain fetch of the same path).
//
//   node tests/queen_client/admin_api.mjs BASE_URL [CLIENT_DIR]
//
// BASE_URL: the sidecar (e.g. http://127.0.0.1:6632); it must serve a database of its own,
// fresh (the system-wide figures, the overview and the maintenance mode, are asserted exactly).
// CLIENT_DIR: the client's copy (default build/queen-client/suite). Prints `ok admin: NAME` or
// `FAILED admin: NAME: why` per check, then `queen-client admin: P passed, F failed`; exits 1
// when a check failed. docs/queen-compatibility.md lists each answer and its differences.
import assert from 'node:assert/strict'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const base = process.argv[2]
if (!base) {
  console.log('FAILED admin: harness: usage: admin_api.mjs BASE_URL [CLIENT_DIR]')
  process.exit(1)
}
const clientDir = process.argv[3] || path.join(here, '../../build/queen-client/suite')
const { Queen } = await import(pathToFileURL(path.join(clientDir, 'client-v2/index.js')).href)

// One attempt per call: a 5xx answered by design (501) is asserted, not retried.
const queen = new Queen({ url: base, retryAttempts: 1, handleSignals: false })
const admin = queen.admin

let passed = 0
let failed = 0
// Run one named check: ok when it returns, FAILED with the reason when it throws.
async function check(name, fn) {
  try {
    await fn()
    console.log(`ok admin: ${name}`)
    passed++
  } catch (e) {
    const why = (e && e.message ? e.message : String(e)).replace(/\s+/g, ' ').slice(0, 600)
    console.log(`FAILED admin: ${name}: ${why}`)
    failed++
  }
}

// The error a client call throws: its HTTP status, and the stable code of the same request's
// body (the client keeps only the message).
async function rejects(call, status, method, urlPath, code, body) {
  let err = null
  try {
    await call()
  } catch (e) {
    err = e
  }
  assert.ok(err, `expected HTTP ${status}, the call succeeded`)
  assert.equal(err.status, status, `status (${err.message})`)
  const r = await fetch(base + urlPath, {
    method,
    headers: { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  assert.equal(r.status, status, `plain ${method} ${urlPath}`)
  const j = await r.json()
  assert.equal(j.code, code, `code of ${JSON.stringify(j)}`)
  assert.equal(typeof j.error, 'string')
  return err
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z$/
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
// A pop of exactly what is there now (no long poll).
const pop = (q, part, group, batch) => {
  let b = queen.queue(q)
  if (part) b = b.partition(part)
  if (group) b = b.group(group)
  return b.batch(batch).wait(false).pop()
}
const txids = (msgs) => msgs.map((m) => m.transactionId)
// The six figures of a partition or queue.
const six = (total, pending, processing, completed, deadLetter) =>
  ({ total, pending, processing, completed, failed: 0, deadLetter })

// ---------------------------------------------------------------- the seeded state
const p = 'adm' + Date.now().toString(36)
const ns = `${p}-ns`
const task = `${p}-task`
const qa = `${p}-orders` // namespace + task; p0 3, p1 2, p2 1
const qb = `${p}-dead` // namespace; Default 3, nacked to the DLQ
const qs = `${p}-seek` // s0: 2 then 2 later
const LAG = `${p}-lag` // on qa/p0: consumed 1 of 3
const SEEK = `${p}-seeker` // on qs: consumed all 4
const t0 = new Date(Date.now() - 60_000).toISOString()
let t1 // between qs's two pushes
const seeded = {}

await check('seed: queues, pushes, a lagging group, a lease, dead letters', async () => {
  seeded.start = Date.now()
  await queen.queue(qa).namespace(ns).task(task).config({ leaseTime: 60, retryLimit: 2 }).create()
  await queen.queue(qb).namespace(ns).config({ retryLimit: 1 }).create()
  await queen.queue(qs).config({ leaseTime: 60 }).create()
  const push = async (q, part, ids) => {
    const r = await queen.queue(q).partition(part).push(ids.map((id, n) => ({ transactionId: `${p}-${id}`, data: { id, n } })))
    assert.deepEqual(r.map((x) => x.status), ids.map(() => 'queued'))
  }
  await push(qa, 'p0', ['a0', 'a1', 'a2'])
  await push(qa, 'p1', ['b0', 'b1'])
  await push(qa, 'p2', ['c0'])
  await push(qb, 'Default', ['d0', 'd1', 'd2'])
  await push(qs, 's0', ['s0', 's1'])
  await sleep(50)
  t1 = new Date().toISOString()
  await sleep(50)
  await push(qs, 's0', ['s2', 's3'])

  // LAG consumes a0 on qa/p0: cursor 0, 2 pending.
  const lag = await pop(qa, 'p0', LAG, 1)
  assert.deepEqual(txids(lag), [`${p}-a0`])
  assert.equal((await queen.ack(lag[0], true, { group: LAG })).success, true)
  // Queue mode leases b0, b1 on qa/p1 (first lease there: no cursor yet): processing 2.
  const leased = await pop(qa, 'p1', null, 2)
  assert.deepEqual(txids(leased), [`${p}-b0`, `${p}-b1`])
  seeded.p1 = leased[0].partitionId
  // Queue mode on qb: d0 and d1 each nacked twice (retryLimit 1: the second goes to the DLQ).
  for (const id of ['d0', 'd0', 'd1', 'd1']) {
    const m = await pop(qb, null, null, 1)
    assert.deepEqual(txids(m), [`${p}-${id}`])
    const a = await queen.ack(m[0], false, { error: `boom ${id}` })
    assert.equal(a.success, true)
    seeded.qbPartition = m[0].partitionId
  }
  // SEEK consumes all four of qs/s0.
  const all = await pop(qs, 's0', SEEK, 10)
  assert.deepEqual(txids(all), ['s0', 's1', 's2', 's3'].map((x) => `${p}-${x}`))
  assert.equal((await queen.ack(all, true, { group: SEEK })).success, true)
  seeded.s0 = all[0].partitionId
  seeded.at = Date.now()
})

// Figures after seeding (docs/queen-compatibility.md, "The figures"):
//   qa: Default 0; p0 total 3, pending 2, completed 1 (LAG); p1 total 2, pending 2, processing 2
//       (the lease); p2 total 1, pending 1 (no group).            qa: 6, 5, 2, 1, 0
//   qb: Default total 3, pending 1 (d2), deadLetter 2.            qb: 3, 1, 0, 0, 2
//   qs: Default 0; s0 total 4, completed 4.                        qs: 4, 0, 0, 4, 0
const qaTotals = six(6, 5, 2, 1, 0)
const qbTotals = six(3, 1, 0, 0, 2)
const qsTotals = six(4, 0, 0, 4, 0)
// The list routes answer pending without processing and no `failed`.
const listed = (t) => ({ total: t.total, pending: t.pending - t.processing, processing: t.processing, completed: t.completed, deadLetter: t.deadLetter })

// ---------------------------------------------------------------- resources
await check('getOverview', async () => {
  const o = await admin.getOverview()
  assert.equal(o.queues, 3)
  assert.equal(o.partitions, 7)
  assert.equal(o.namespaces, 1)
  assert.equal(o.tasks, 1)
  assert.deepEqual(o.messages, six(13, 4, 2, 5, 2))
  // Offset lag over the 7 partitions' pending (0, 2, 2, 1, 1, 0, 0): avg 1 (6/7), median 1.
  assert.deepEqual(o.lag.offset, { avg: 1, median: 1, min: 0, max: 2 })
  // Time lag: the age in whole seconds of the oldest pending message of qa/p0, p1, p2 and
  // qb/Default, all pushed by the seed: at most the seconds since it began, within a second
  // of one another (its pushes took milliseconds); avg and median between min and max.
  const t = o.lag.time
  const most = Math.floor((Date.now() - seeded.start) / 1000)
  assert.ok(t.min >= 0 && t.max <= most && t.max - t.min <= 1, `time lag ${JSON.stringify(t)}, seed began ${most} s ago`)
  assert.ok([t.avg, t.median].every((x) => Number.isInteger(x) && x >= t.min && x <= t.max), JSON.stringify(t))
  assert.deepEqual(o.throughput, { ingestedPerSecond: 0, processedPerSecond: 0 })
  assert.equal(o.statsAge, 0)
  assert.match(o.timestamp, iso)
})

await check('getNamespaces', async () => {
  const r = await admin.getNamespaces()
  assert.deepEqual(r, { namespaces: [{ namespace: ns, queues: 2, partitions: 5, messages: { total: 9, pending: 4 } }] })
})

await check('getTasks', async () => {
  const r = await admin.getTasks()
  assert.deepEqual(r, { tasks: [{ task, queues: 1, partitions: 4, messages: { total: 6, pending: 3 } }] })
})

await check('listQueues', async () => {
  const r = await admin.listQueues()
  assert.deepEqual(r.queues.map((q) => q.name), [qs, qb, qa]) // newest first
  const byName = Object.fromEntries(r.queues.map((q) => [q.name, q]))
  assert.deepEqual(byName[qa].messages, listed(qaTotals))
  assert.deepEqual(byName[qb].messages, listed(qbTotals))
  assert.deepEqual(byName[qs].messages, listed(qsTotals))
  assert.deepEqual([byName[qa].namespace, byName[qa].task, byName[qa].partitions], [ns, task, 4])
  assert.deepEqual([byName[qb].namespace, byName[qb].task, byName[qb].partitions], [ns, null, 1])
  assert.deepEqual([byName[qs].namespace, byName[qs].task, byName[qs].partitions], [null, null, 2])
  for (const q of r.queues) assert.match(q.createdAt, iso)
  const page = await admin.listQueues({ limit: 1, offset: 1 })
  assert.deepEqual(page.queues.map((q) => q.name), [qb])
})

await check('getQueue', async () => {
  const q = await admin.getQueue(qa)
  assert.equal(q.name, qa)
  assert.equal(q.namespace, ns)
  assert.equal(q.task, task)
  assert.equal(q.options.leaseTime, 60)
  assert.equal(q.options.retryLimit, 2)
  assert.deepEqual(q.totals, qaTotals)
  assert.deepEqual(q.partitions.map((x) => [x.name, x.stats]), [
    ['Default', six(0, 0, 0, 0, 0)], ['p0', six(3, 2, 0, 1, 0)], ['p1', six(2, 2, 2, 0, 0)], ['p2', six(1, 1, 0, 0, 0)]])
  assert.equal(q.partitions[2].id, seeded.p1)
  assert.equal(q.partitions[0].newestMessage, null)
  assert.match(q.partitions[1].newestMessage, iso)
  await rejects(() => admin.getQueue(`${p}-nope`), 404, 'GET', `/api/v1/resources/queues/${p}-nope`, 'not_found')
})

await check('getPartitions', async () => {
  const r = await admin.getPartitions({ queue: qb })
  assert.deepEqual(r.pagination, { limit: 1000, offset: 0 })
  assert.equal(r.partitions.length, 1)
  const [x] = r.partitions
  assert.deepEqual([x.id, x.name, x.queue, x.stats], [seeded.qbPartition, 'Default', qb, qbTotals])
  const all = await admin.getPartitions()
  assert.equal(all.partitions.length, 7)
  await rejects(() => admin.getPartitions({ queue: `${p}-nope` }), 404, 'GET', `/api/v1/resources/partitions?queue=${p}-nope`, 'not_found')
})

// ---------------------------------------------------------------- messages and traces
await check('listMessages', async () => {
  const r = await admin.listMessages({ queue: qb })
  assert.deepEqual(r.mode, { hasQueueMode: true, busGroupsCount: 0, type: 'queue' })
  assert.deepEqual(r.pagination, { limit: 200, offset: 0 })
  assert.deepEqual(r.messages.map((m) => [m.transactionId, m.status, m.partition, m.payload.id]),
    [[`${p}-d2`, 'pending', 'Default', 'd2'], [`${p}-d1`, 'dead_letter', 'Default', 'd1'], [`${p}-d0`, 'dead_letter', 'Default', 'd0']])
  for (const m of r.messages) {
    assert.equal(m.queue, qb)
    assert.equal(m.queuePath, `${qb}/Default`)
    assert.deepEqual([m.namespace, m.task], [ns, null]) // the queue's, as configure stored them
    assert.equal(m.partitionId, seeded.qbPartition)
    assert.match(m.id, uuid)
    assert.match(m.createdAt, iso)
  }
  const leased = await admin.listMessages({ queue: qa, partition: 'p1' })
  assert.deepEqual(leased.messages.map((m) => [m.transactionId, m.status, m.namespace, m.task]),
    [[`${p}-b1`, 'processing', ns, task], [`${p}-b0`, 'processing', ns, task]])
  assert.match(leased.messages[0].leaseExpiresAt, iso)
  const p0 = await admin.listMessages({ queue: qa, partition: 'p0' })
  assert.deepEqual(p0.messages.map((m) => [m.transactionId, m.status, m.busStatus]), [
    [`${p}-a2`, 'pending', { consumedBy: 0, totalGroups: 1 }],
    [`${p}-a1`, 'pending', { consumedBy: 0, totalGroups: 1 }],
    [`${p}-a0`, 'completed', { consumedBy: 1, totalGroups: 1 }]])
  const paged = await admin.listMessages({ queue: qa, limit: 2, offset: 1 })
  assert.equal(paged.messages.length, 2)
  assert.deepEqual(paged.pagination, { limit: 2, offset: 1 })
})

await check('getMessage', async () => {
  const m = await admin.getMessage(seeded.p1, `${p}-b0`)
  assert.equal(m.transactionId, `${p}-b0`)
  assert.equal(m.partitionId, seeded.p1)
  assert.deepEqual([m.queue, m.partition, m.queuePath, m.offset], [qa, 'p1', `${qa}/p1`, 0])
  assert.deepEqual([m.namespace, m.task], [ns, task])
  assert.equal(m.status, 'processing')
  assert.deepEqual(m.payload, { id: 'b0', n: 0 })
  assert.equal(m.isEncrypted, false)
  assert.deepEqual(m.queueConfig, { leaseTime: 60, retryLimit: 2, retryDelay: 1000, ttl: 3600, priority: 0 })
  assert.deepEqual(m.consumerGroups.map((g) => [g.name, g.consumed]), [['__QUEUE_MODE__', false]])
  assert.match(m.leaseExpiresAt, iso)
  const dead = await admin.getMessage(seeded.qbPartition, `${p}-d0`)
  assert.equal(dead.status, 'dead_letter')
  assert.equal(dead.errorMessage, 'boom d0')
  await rejects(() => admin.getMessage(seeded.p1, `${p}-nope`), 404, 'GET', `/api/v1/messages/${seeded.p1}/${p}-nope`, 'not_found')
})

await check('getTraceNames', async () => {
  assert.deepEqual(await admin.getTraceNames(), { trace_names: [], total: 0, pagination: { limit: 50, offset: 0 } })
  assert.deepEqual(await admin.getTraceNames({ limit: 5, offset: 2 }), { trace_names: [], total: 0, pagination: { limit: 5, offset: 2 } })
  await rejects(() => admin.getTraceNames({ limit: -1 }), 400, 'GET', '/api/v1/traces/names?limit=-1', 'bad_request')
})

await check('getTracesByName', async () => {
  assert.deepEqual(await admin.getTracesByName('order placed/x'), { traces: [], total: 0, pagination: { limit: 100, offset: 0 } })
})

await check('getTracesForMessage', async () => {
  assert.deepEqual(await admin.getTracesForMessage(seeded.p1, `${p}-b0`), { traces: [] })
  await rejects(() => admin.getTracesForMessage(seeded.p1, `${p}-nope`), 404, 'GET', `/api/v1/traces/${seeded.p1}/${p}-nope`, 'not_found')
})

// ---------------------------------------------------------------- status and analytics
await check('getStatus', async () => {
  const a = await admin.getStatus({ queue: qa })
  assert.deepEqual(a.queues, [{ id: a.queues[0].id, name: qa, namespace: ns, task, partitions: 4, totalConsumed: 1 }])
  assert.deepEqual(a.leases, { active: 1, partitionsWithLeases: 1, totalBatchSize: 2, totalAcked: 0 })
  const { requests, batchEfficiency, ...figures } = a.messages
  assert.deepEqual(figures, six(6, 3, 2, 1, 0))
  assert.deepEqual(a.deadLetterQueue, { totalMessages: 0, affectedPartitions: 0, topErrors: [] })
  assert.deepEqual([a.throughput, a.workers, a.pointCount, a.bucketMinutes], [[], [], 0, 1])
  const b = await admin.getStatus({ queue: qb })
  // each dead letter carries its last nack's error
  assert.deepEqual(b.deadLetterQueue, { totalMessages: 2, affectedPartitions: 1,
    topErrors: [{ error: 'boom d0', count: 1 }, { error: 'boom d1', count: 1 }] })
  assert.deepEqual(b.errors, { dbErrors: 0, ackFailed: 0, dlqMessages: 2 })
  const all = await admin.getStatus()
  assert.deepEqual(all.queues.map((q) => q.name).sort(), [qa, qb, qs].sort())
  await rejects(() => admin.getStatus({ from: 'yesterday-ish' }), 400, 'GET', '/api/v1/status?from=yesterday-ish', 'invalid_input')
})

await check('getQueueStats', async () => {
  const r = await admin.getQueueStats({ namespace: ns })
  assert.deepEqual(r.pagination, { limit: 100, offset: 0 })
  assert.deepEqual(r.queues.map((q) => [q.name, q.messages]), [
    [qb, { total: 3, pending: 1, processing: 0, completed: 0, deadLetter: 2 }],
    [qa, { total: 6, pending: 5, processing: 2, completed: 1, deadLetter: 0 }]])
  const one = await admin.getQueueStats({ queue: qs })
  assert.deepEqual(one.queues.map((q) => [q.name, q.partitions]), [[qs, 2]])
})

await check('getQueueDetail', async () => {
  const d = await admin.getQueueDetail(qa)
  assert.deepEqual([d.queue.name, d.queue.namespace, d.queue.task, d.queue.priority], [qa, ns, task, 0])
  assert.equal(d.queue.config.leaseTime, 60)
  assert.equal(d.queue.config.retryLimit, 2)
  const { messages, ...totals } = d.totals
  assert.deepEqual(totals, qaTotals)
  assert.deepEqual(messages, qaTotals)
  assert.deepEqual(d.partitions.map((x) => [x.name, x.stats, x.cursor]), [
    ['Default', six(0, 0, 0, 0, 0), { totalConsumed: 0, batchesConsumed: 0 }],
    ['p0', six(3, 2, 0, 1, 0), { totalConsumed: 1, batchesConsumed: 0 }],
    ['p1', six(2, 2, 2, 0, 0), { totalConsumed: 0, batchesConsumed: 0 }],
    ['p2', six(1, 1, 0, 0, 0), { totalConsumed: 0, batchesConsumed: 0 }]])
  await rejects(() => admin.getQueueDetail(`${p}-nope`), 404, 'GET', `/api/v1/status/queues/${p}-nope`, 'not_found')
})

await check('getAnalytics', async () => {
  const to = new Date(Date.now() + 60_000).toISOString()
  const r = await admin.getAnalytics({ queue: qa, interval: 'minute', from: t0, to })
  assert.equal(r.interval, 'minute')
  assert.ok(r.dataPoints.length >= 2 && r.dataPoints.length <= 4, `${r.dataPoints.length} buckets`)
  assert.equal(r.dataPoints.reduce((s, x) => s + x.messages, 0), 6)
  const all = await admin.getAnalytics({ interval: 'minute', from: t0, to })
  assert.equal(all.dataPoints.reduce((s, x) => s + x.messages, 0), 13)
  await rejects(() => admin.getAnalytics({ interval: 'week' }), 400, 'GET', '/api/v1/status/analytics?interval=week', 'invalid_parameter')
})

// ---------------------------------------------------------------- consumer groups
await check('listConsumerGroups', async () => {
  const r = await admin.listConsumerGroups()
  const key = (g) => `${g.name} ${g.queueName}`
  const by = Object.fromEntries(r.map((g) => [key(g), g]))
  assert.deepEqual(Object.keys(by).sort(), [`__QUEUE_MODE__ ${qa}`, `__QUEUE_MODE__ ${qb}`, `${LAG} ${qa}`, `${SEEK} ${qs}`].sort())
  const pick = (g) => [g.topics, g.members, g.partitionsWithLag, g.totalLag, g.state]
  assert.deepEqual(pick(by[`${LAG} ${qa}`]), [[qa], 1, 1, 2, 'Stable'])
  assert.deepEqual(pick(by[`__QUEUE_MODE__ ${qa}`]), [[qa], 1, 1, 2, 'Dead'])
  assert.deepEqual(pick(by[`__QUEUE_MODE__ ${qb}`]), [[qb], 1, 1, 1, 'Stable'])
  assert.deepEqual(pick(by[`${SEEK} ${qs}`]), [[qs], 1, 0, 0, 'Stable'])
  assert.equal(by[`${LAG} ${qa}`].subscriptionMode, 'all')
  assert.equal(by[`__QUEUE_MODE__ ${qa}`].subscriptionMode, null)
})

await check('refreshConsumerStats', async () => {
  const r = await admin.refreshConsumerStats()
  assert.equal(r.success, true)
  assert.equal(r.skipped, true)
  assert.equal(typeof r.reason, 'string')
})

await check('getConsumerGroup', async () => {
  const r = await admin.getConsumerGroup(LAG)
  assert.deepEqual(Object.keys(r), [qa])
  assert.equal(r[qa].partitions.length, 1)
  const [x] = r[qa].partitions
  assert.deepEqual([x.partition, x.workerId, x.lastConsumedAt, x.totalConsumed, x.offsetLag, x.leaseActive], ['p0', null, null, 1, 2, false])
  assert.ok(Number.isInteger(x.timeLagSeconds) && x.timeLagSeconds >= 0)
  const qm = await admin.getConsumerGroup('__QUEUE_MODE__')
  assert.deepEqual(Object.keys(qm).sort(), [qa, qb].sort())
  assert.deepEqual(qm[qa].partitions.map((y) => [y.partition, y.offsetLag, y.leaseActive]), [['p1', 2, true]])
  await rejects(() => admin.getConsumerGroup(`${p}-nobody`), 404, 'GET', `/api/v1/consumer-groups/${p}-nobody`, 'not_found')
})

await check('getLaggingConsumers', async () => {
  const wait = seeded.at + 2500 - Date.now()
  if (wait > 0) await sleep(wait) // the oldest pending messages are then over 2 s old
  const r = await admin.getLaggingConsumers(1)
  const rows = r.map((x) => [x.consumer_group, x.queue_name, x.partition_name, x.offset_lag]).sort()
  assert.deepEqual(rows, [['__QUEUE_MODE__', qa, 'p1', 2], ['__QUEUE_MODE__', qb, 'Default', 1], [LAG, qa, 'p0', 2]].sort())
  const lag = r.find((x) => x.consumer_group === LAG)
  assert.equal(lag.partition_id, (await admin.getQueue(qa)).partitions[1].id)
  assert.ok(lag.time_lag_seconds >= 2, `time_lag_seconds ${lag.time_lag_seconds}`)
  assert.deepEqual([lag.worker_id, lag.last_consumed_at], [null, null])
  assert.match(lag.oldest_unconsumed_at, /^\d{4}-\d\d-\d\dT/)
  assert.deepEqual(await admin.getLaggingConsumers(3600), [])
  await rejects(() => admin.getLaggingConsumers('soon'), 400, 'GET', '/api/v1/consumer-groups/lagging?minLagSeconds=soon', 'invalid_parameter')
})

await check('seekConsumerGroup: to a time, then exactly the later messages again', async () => {
  const r = await admin.seekConsumerGroup(SEEK, qs, { timestamp: t1 })
  assert.equal(r.success, true)
  assert.deepEqual([r.consumerGroup, r.queueName, r.seekToEnd, r.partitionsUpdated], [SEEK, qs, false, 1])
  const again = await pop(qs, 's0', SEEK, 10)
  assert.deepEqual(txids(again), [`${p}-s2`, `${p}-s3`])
  assert.equal((await queen.ack(again, true, { group: SEEK })).success, true)
  assert.deepEqual(await pop(qs, 's0', SEEK, 10), [])
})

await check('seekConsumerGroup: to the start, then all again; to the end, then nothing', async () => {
  const r = await admin.seekConsumerGroup(SEEK, qs, { timestamp: t0 })
  assert.equal(r.partitionsUpdated, 1)
  const again = await pop(qs, 's0', SEEK, 10)
  assert.deepEqual(txids(again), ['s0', 's1', 's2', 's3'].map((x) => `${p}-${x}`))
  // the seek to the end cancels this lease: nothing is delivered again
  const end = await admin.seekConsumerGroup(SEEK, qs, { toEnd: true })
  assert.deepEqual([end.success, end.seekToEnd, end.partitionsUpdated], [true, true, 1])
  assert.deepEqual(await pop(qs, 's0', SEEK, 10), [])
  const gone = await queen.ack(again[0], true, { group: SEEK })
  assert.equal(gone[0]?.success ?? gone.success, false, `ack of a cancelled lease: ${JSON.stringify(gone)}`)
})

await check('seekConsumerGroup: refusals', async () => {
  const url = (g, q) => `/api/v1/consumer-groups/${g}/queues/${q}/seek`
  await rejects(() => admin.seekConsumerGroup(`${p}-nobody`, qs, { toEnd: true }), 404, 'POST', url(`${p}-nobody`, qs), 'not_found', { toEnd: true })
  await rejects(() => admin.seekConsumerGroup(SEEK, `${p}-nope`, { toEnd: true }), 404, 'POST', url(SEEK, `${p}-nope`), 'not_found', { toEnd: true })
  await rejects(() => admin.seekConsumerGroup(SEEK, qs, {}), 400, 'POST', url(SEEK, qs), 'bad_request', {})
  await rejects(() => admin.seekConsumerGroup(SEEK, qs, { timestamp: 'tea time' }), 400, 'POST', url(SEEK, qs), 'invalid_input', { timestamp: 'tea time' })
})

await check('deleteConsumerGroupForQueue: then everything consumed again', async () => {
  const r = await admin.deleteConsumerGroupForQueue(SEEK, qs)
  assert.deepEqual(r, { success: true, consumerGroup: SEEK, queueName: qs, deletedPartitions: 1, metadataDeleted: true })
  const again = await pop(qs, 's0', SEEK, 10)
  assert.deepEqual(txids(again), ['s0', 's1', 's2', 's3'].map((x) => `${p}-${x}`))
  assert.equal((await queen.ack(again, true, { group: SEEK })).success, true)
  const kept = await admin.deleteConsumerGroupForQueue(SEEK, qs, false)
  assert.deepEqual([kept.deletedPartitions, kept.metadataDeleted], [1, false])
  const url = `/api/v1/consumer-groups/${p}-nobody/queues/${qs}?deleteMetadata=true`
  await rejects(() => admin.deleteConsumerGroupForQueue(`${p}-nobody`, qs), 404, 'DELETE', url, 'not_found')
})

// ---------------------------------------------------------------- dead letters
await check('retryMessage: the dead letter delivered once', async () => {
  const r = await admin.retryMessage(seeded.qbPartition, `${p}-d0`)
  assert.equal(r.success, true)
  assert.deepEqual([r.partitionId, r.transactionId, r.consumerGroup], [seeded.qbPartition, `${p}-d0`, '__QUEUE_MODE__'])
  assert.match(r.retriedAs.transactionId, new RegExp(`^${p}-d0\\.retry-\\d+$`))
  assert.equal(r.retriedAs.offset, 3)
  const got = await pop(qb, null, null, 10)
  assert.deepEqual(txids(got), [`${p}-d2`, r.retriedAs.transactionId])
  assert.deepEqual(got[1].data, { id: 'd0', n: 0 })
  assert.equal((await queen.ack(got, true)).success, true)
  assert.deepEqual(await pop(qb, null, null, 10), [])
  const dlq = await queen.queue(qb).dlq().get()
  assert.deepEqual(dlq.messages.map((m) => m.transactionId), [`${p}-d1`])
  await rejects(() => admin.retryMessage(seeded.qbPartition, `${p}-d0`), 404, 'POST', `/api/v1/messages/${seeded.qbPartition}/${p}-d0/retry`, 'not_found', {})
  // a message that is no dead letter: nothing to retry
  await rejects(() => admin.retryMessage(seeded.p1, `${p}-b0`), 404, 'POST', `/api/v1/messages/${seeded.p1}/${p}-b0/retry`, 'not_found', {})
})

await check('deleteMessage', async () => {
  const r = await admin.deleteMessage(seeded.qbPartition, `${p}-d1`)
  assert.deepEqual([r.success, r.partitionId, r.transactionId, r.deleted], [true, seeded.qbPartition, `${p}-d1`, 1])
  const dlq = await queen.queue(qb).dlq().get()
  assert.deepEqual(dlq.messages, [])
  const url = `/api/v1/messages/${seeded.qbPartition}/${p}-d1`
  // the message itself stays in the log: not a dead letter any more
  await rejects(() => admin.deleteMessage(seeded.qbPartition, `${p}-d1`), 409, 'DELETE', url, 'not_deletable')
  await rejects(() => admin.deleteMessage(seeded.qbPartition, `${p}-nope`), 404, 'DELETE', `/api/v1/messages/${seeded.qbPartition}/${p}-nope`, 'not_found')
})

await check('moveMessageToDLQ: no such route (as the broker)', async () => {
  await rejects(() => admin.moveMessageToDLQ(seeded.p1, `${p}-b0`), 404, 'POST', `/api/v1/messages/${seeded.p1}/${p}-b0/dlq`, 'no_route', {})
})

await check('clearQueue: no such route (as the broker)', async () => {
  await rejects(() => admin.clearQueue(qa), 404, 'DELETE', `/api/v1/queues/${qa}/clear`, 'no_route')
  await rejects(() => admin.clearQueue(qa, 'p0'), 404, 'DELETE', `/api/v1/queues/${qa}/clear?partition=p0`, 'no_route')
  assert.equal((await admin.getQueue(qa)).totals.total, 6) // nothing cleared
})

// ---------------------------------------------------------------- system
await check('health', async () => {
  assert.deepEqual(await admin.health(), { status: 'ok', postgres: 'up' })
})

await check('metrics', async () => {
  // Prometheus text: the client parses JSON only and resolves null (docs: a difference).
  assert.equal(await admin.metrics(), null)
  const r = await fetch(base + '/metrics')
  assert.equal(r.status, 200)
  assert.match(r.headers.get('content-type'), /^text\/plain/)
  assert.match(await r.text(), /^# (HELP|TYPE) /m)
})

await check('getMaintenanceMode', async () => {
  assert.deepEqual(await admin.getMaintenanceMode(), {
    maintenanceMode: false, popMaintenanceMode: false, bufferedMessages: 0, bufferHealthy: true,
    bufferStats: { parkedMessages: 0, queues: 0, partitions: 0, oldestParkedAt: null, changedAt: null }
  })
})

await check('setMaintenanceMode: on, a push parked, off, the push delivered', async () => {
  const on = await admin.setMaintenanceMode(true)
  assert.deepEqual([on.maintenanceMode, on.bufferedMessages, on.bufferHealthy], [true, 0, true])
  const pushed = await queen.queue(qa).partition('p2').push([{ transactionId: `${p}-c1`, data: { id: 'c1' } }])
  assert.deepEqual(pushed.map((x) => x.status), ['buffered'])
  const status = await admin.getMaintenanceMode()
  assert.deepEqual([status.maintenanceMode, status.bufferedMessages, status.bufferStats.parkedMessages], [true, 1, 1])
  assert.match(status.bufferStats.changedAt, /^\d{4}-/)
  assert.equal((await admin.getQueue(qa)).partitions[3].stats.total, 1) // parked, not stored
  const off = await admin.setMaintenanceMode(false)
  assert.deepEqual([off.maintenanceMode, off.bufferedMessages, off.delivered, off.duplicates], [false, 0, 1, 0])
  assert.equal((await admin.getMaintenanceMode()).maintenanceMode, false)
  const got = await pop(qa, 'p2', null, 10)
  assert.deepEqual(txids(got), [`${p}-c0`, `${p}-c1`])
  await rejects(() => admin.setMaintenanceMode('yes'), 400, 'POST', '/api/v1/system/maintenance', 'bad_request', { enabled: 'yes' })
})

await check('getPopMaintenanceMode', async () => {
  const r = await admin.getPopMaintenanceMode()
  assert.equal(r.popMaintenanceMode, false)
  assert.equal(typeof r.message, 'string')
})

await check('setPopMaintenanceMode: off as asked, on refused (501)', async () => {
  assert.equal((await admin.setPopMaintenanceMode(false)).popMaintenanceMode, false)
  await rejects(() => admin.setPopMaintenanceMode(true), 501, 'POST', '/api/v1/system/maintenance/pop', 'not_supported', { enabled: true })
  assert.equal((await admin.getPopMaintenanceMode()).popMaintenanceMode, false)
})

await check('getSystemMetrics', async () => {
  const from = '2026-01-01T00:00:00.000Z'
  const to = '2026-01-01T02:00:00.000Z'
  assert.deepEqual(await admin.getSystemMetrics({ from, to }), {
    timeRange: { from, to }, bucketMinutes: 5, replicas: [], replicaCount: 0, pointCount: 0
  })
  const r = await admin.getSystemMetrics()
  assert.equal(r.bucketMinutes, 1)
  assert.match(r.timeRange.from, iso)
  await rejects(() => admin.getSystemMetrics({ from: 'dawn' }), 400, 'GET', '/api/v1/analytics/system-metrics?from=dawn', 'invalid_parameter')
})

await check('getWorkerMetrics', async () => {
  const r = await admin.getWorkerMetrics()
  assert.deepEqual([r.pointCount, r.timeSeries, r.workers, r.queues, r.bucketMinutes], [0, [], [], [], 1])
  assert.deepEqual(r.summary, {
    totalPushMessages: 0, totalPopMessages: 0, totalAckMessages: 0, totalPushRequests: 0, totalPopRequests: 0,
    totalAckRequests: 0, totalDbErrors: 0, totalAckFailed: 0, totalDlq: 0, pendingMessages: 0
  })
})

await check('getPostgresStats', async () => {
  const r = await admin.getPostgresStats()
  assert.equal(typeof r.database, 'string')
  assert.match(r.timestamp, iso)
  assert.equal(r.databaseCache.database, r.database)
  const tables = r.tableCache.map((t) => t.table)
  for (const t of ['log_partitions', 'log_segments', 'consumer_groups', 'consumer_state', 'consumer_dlq']) assert.ok(tables.includes(t), `tableCache lacks ${t}`)
  for (const t of r.tableCache) assert.equal(t.schema, 'queen')
  for (const k of ['indexCache', 'deadTuples', 'hotUpdates', 'activeQueries', 'autovacuumStatus', 'bufferUsage', 'tableSizes']) assert.ok(Array.isArray(r[k]), `${k} is no array`)
  assert.ok(r.indexCache.length <= 20)
  assert.equal(typeof r.bufferConfig.sharedBuffers, 'string')
})

// Every method of the client's admin API was called above.
await check('every admin method covered', async () => {
  const { Admin } = await import(pathToFileURL(path.join(clientDir, 'client-v2/admin/Admin.js')).href)
  const methods = Object.getOwnPropertyNames(Admin.prototype).filter((m) => m !== 'constructor').sort()
  const src = (await import('node:fs')).readFileSync(fileURLToPath(import.meta.url), 'utf8')
  const missing = methods.filter((m) => !src.includes(`admin.${m}(`))
  assert.deepEqual(missing, [], `not called: ${missing.join(', ')}`)
  assert.equal(methods.length, 34)
})

console.log(`queen-client admin: ${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
