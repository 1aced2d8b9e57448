// The README's screenshots (issue #17): every image it shows exists under
// docs/screenshots/, stays under 200 KB, and every screenshot there is shown.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile, readdir, stat } from "node:fs/promises";

const ROOT = new URL("../../../", import.meta.url);

test("the README shows every screenshot, each under 200 KB", async () => {
  const readme = await readFile(new URL("README.md", ROOT), "utf8");
  const shown = [...readme.matchAll(/!\[[^\]]+\]\((docs\/screenshots\/[^)]+)\)/g)].map((m) => m[1]);
  const files = (await readdir(new URL("docs/screenshots/", ROOT))).map((f) => `docs/screenshots/${f}`);
  assert.ok(shown.length >= 6, `images shown: ${shown}`);
  assert.deepEqual([...shown].sort(), [...files].sort(), "shown = present");
  for (const f of files) {
    const { size } = await stat(new URL(f, ROOT));
    assert.ok(size > 5_000 && size < 200 * 1024, `${f}: ${size} bytes`);
  }
});
