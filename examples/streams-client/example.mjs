// The public Durable Streams client (@durable-streams/client) against queen's sidecar:
// create a JSON stream, append through the client's idempotent producer, read everything back.
// Usage: node example.mjs http://127.0.0.1:6632 [stream-name]
// Prints one JSON line: {"stream": ..., "items": [...], "nextOffset": ..., "upToDate": ...}.
import { DurableStream, IdempotentProducer, stream } from "@durable-streams/client"

const base = process.argv[2] || "http://127.0.0.1:6632"
const name = process.argv[3] || `example-${Date.now()}`
const url = `${base}/v1/stream/${name}`

// Create the stream (application/json: every appended value is one message).
const handle = await DurableStream.create({ url, contentType: "application/json" })

// Append 10 events through the idempotent producer (epoch claimed automatically, seqs
// numbered by the client; a retried batch is answered as a duplicate, never written twice).
const errors = []
const producer = new IdempotentProducer(handle, "example-producer", {
  autoClaim: true,
  onError: (err) => errors.push(String(err)),
})
for (let i = 0; i < 10; i++) producer.append(JSON.stringify({ n: i, text: `event ${i}` }))
await producer.flush()
// A second session of the same producer: restart() bumps the epoch (seq back to 0), the
// final message is appended and the stream closed in one idempotent request.
await producer.restart()
producer.append(JSON.stringify({ n: 10, text: "after restart" }))
const closed = await producer.close(JSON.stringify({ n: 11, text: "final" }))
if (errors.length) {
  console.error("producer errors:", errors)
  process.exit(1)
}

// Read it all back from the start (catch-up, no live tail).
const res = await stream({ url, offset: "-1", live: false })
const items = await res.json()
console.log(JSON.stringify({
  stream: name,
  items,
  epoch: producer.epoch,
  closeOffset: closed.finalOffset,
  nextOffset: res.offset,
  upToDate: res.upToDate,
  streamClosed: res.streamClosed,
}))
