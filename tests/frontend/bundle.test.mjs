// tools/bundle_frontend.mjs: the build is deterministic, writes its output outside the sources
// (a build output, never committed beside them), and what it cannot bundle is an error.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { build, FRONTEND, OUTPUT } from "../../tools/bundle_frontend.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const SCRIPT = join(ROOT, "tools", "bundle_frontend.mjs");

test("the build is deterministic and lands in the build folder, not beside the sources", () => {
  assert.equal(build(), build());
  assert.equal(relative(ROOT, OUTPUT), join("tb_iotrace", "plugin", "frontend-build", "index.js"));
  assert.ok(!existsSync(join(FRONTEND, "index.js")), "plugin_frontend/index.js: the bundle is a build output, not a source");
  const ignore = readFileSync(join(ROOT, ".gitignore"), "utf8").split("\n").map((l) => l.trim());
  assert.ok(ignore.includes("/" + dirname(relative(ROOT, OUTPUT)) + "/"), ".gitignore must name the build folder");
});

test("the script writes the bundle where asked, and --check tells a stale one", () => {
  const dir = mkdtempSync(join(tmpdir(), "tbio-bundle-out-"));
  const out = join(dir, "sub", "index.js");
  try {
    execFileSync(process.execPath, [SCRIPT, "--out", out], { stdio: "pipe" });
    assert.equal(readFileSync(out, "utf8"), build());
    execFileSync(process.execPath, [SCRIPT, "--check", "--out", out], { stdio: "pipe" });
    writeFileSync(out, "stale");
    assert.throws(() => execFileSync(process.execPath, [SCRIPT, "--check", "--out", out], { stdio: "pipe" }), /stale/);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test("the bundle carries every module and the stylesheet, and exports render", async () => {
  const text = build();
  for (const m of ["lib/dom.js", "lib/format.js", "lib/colors.js", "timeline/loader.js", "timeline/input.js",
                   "timeline/view.js", "views/hosts.js", "app.js", "main.js"]) {
    assert.ok(text.includes(`// ---- ${m}\n`), m);
  }
  assert.ok(!/^import /m.test(text), "no import left");
  assert.ok(text.includes(JSON.stringify(readFileSync(join(FRONTEND, "style.css"), "utf8")).slice(0, 60)));
  const dir = mkdtempSync(join(tmpdir(), "tbio-bundle-eval-"));
  try {
    writeFileSync(join(dir, "index.mjs"), text);
    const mod = await import(join(dir, "index.mjs"));  // evaluates every module (none touches the DOM at load)
    assert.equal(typeof mod.render, "function");
  } finally {
    rmSync(dir, { recursive: true });
  }
});

function tree(files) {
  const root = mkdtempSync(join(tmpdir(), "tbio-bundle-"));
  for (const [name, text] of Object.entries({ "style.css": "a{}", ...files })) {
    mkdirSync(join(root, name, ".."), { recursive: true });
    writeFileSync(join(root, name), text);
  }
  return root;
}

const MAIN = 'import { f } from "./a.js";\nconst INLINE_CSS = null;\nexport function render() { return f(INLINE_CSS); }\n';

test("a small tree bundles in dependency order with aliases", () => {
  const root = tree({ "main.js": MAIN.replace("{ f }", "{ g as f }"), "a.js": 'import * as B from "./lib/b.js";\nexport const g = (x) => B.h(x);\n',
                      "lib/b.js": "export function h(x) { return x; }\n" });
  try {
    const text = build(root);
    assert.ok(text.indexOf("// ---- lib/b.js") < text.indexOf("// ---- a.js"));
    assert.ok(text.includes("const { g: f } = __m_a_js;"));
    assert.ok(text.includes("const B = __m_lib_b_js;"));
    assert.ok(text.includes('const INLINE_CSS = "a{}";'));
  } finally {
    rmSync(root, { recursive: true });
  }
});

test("what cannot be bundled is an error", () => {
  const bad = {
    "default export": { "a.js": "export default 1;\n" },
    "re-export": { "a.js": 'export { h } from "./b.js";\n', "b.js": "export const h = 1;\n" },
    "cycle": { "a.js": 'import { m } from "./main.js";\nexport const f = 1;\n' },
    "bare specifier": { "a.js": 'import { x } from "lodash";\nexport const f = x;\n' },
    "dynamic import": { "a.js": 'export const f = () => import("./b.js");\n' },
    "missing module": { "a.js": 'import { q } from "./nope.js";\nexport const f = q;\n' },
  };
  for (const [what, files] of Object.entries(bad)) {
    const root = tree({ "main.js": MAIN, ...files });
    try {
      assert.throws(() => build(root), (e) => e.constructor.name === "BundleError", what);
    } finally {
      rmSync(root, { recursive: true });
    }
  }
  const root = tree({ "main.js": MAIN.replace("const INLINE_CSS = null;\n", ""), "a.js": "export const f = 1;\n" });
  try {
    assert.throws(() => build(root), /INLINE_CSS/);
  } finally {
    rmSync(root, { recursive: true });
  }
});
