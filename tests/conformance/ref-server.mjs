// Starts the @durable-streams/server reference server (file store when a data dir is given)
// and prints "READY <url>" once it listens. Usage: node ref-server.mjs <port> [dataDir]
import { DurableStreamTestServer } from "@durable-streams/server"

const port = Number(process.argv[2] || 0)
const dataDir = process.argv[3]
const server = new DurableStreamTestServer({ port, host: "127.0.0.1", dataDir })
const url = await server.start()
console.log(`READY ${url}`)
process.on("SIGTERM", async () => { await server.stop(); process.exit(0) })
