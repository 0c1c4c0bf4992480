// Vitest config for the Durable Streams conformance suite: vitest excludes node_modules by
// default, so the suite's packaged runner is named explicitly and nothing is excluded.
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["node_modules/@durable-streams/server-conformance-tests/dist/test-runner.js"],
    exclude: [],
    testTimeout: 30000,
    hookTimeout: 30000,
    reporters: ["default", "json"],
    outputFile: { json: process.env.CONFORMANCE_JSON || "conformance-result.json" },
  },
})
