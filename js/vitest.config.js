import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    environment: "jsdom",
    include: ["test/**/*.test.js"],
    setupFiles: ["test/setup.js"],
    // A shared, busy machine can take seconds for a test that takes milliseconds alone.
    testTimeout: 30_000,
  },
});
