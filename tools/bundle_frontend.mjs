#!/usr/bin/env node
// Bundles plugin_frontend/main.js, every module it imports and style.css into
// tb_iotrace/plugin/frontend-build/index.js, the one file TensorBoard loads for the tab: no build tool,
// no dependency, the same bytes for the same sources. The bundle is a build output, not a source:
// `./dev.sh setup`, `pip install` and `python setup.py build_ext` write it (setup.py's
// build_frontend step runs this script); git ignores it.
//
//   node tools/bundle_frontend.mjs           write tb_iotrace/plugin/frontend-build/index.js
//   node tools/bundle_frontend.mjs --check   exit 1 when it is missing or not up to date
//   node tools/bundle_frontend.mjs --out F   write F instead
//   node tools/bundle_frontend.mjs --root D  bundle the sources in D instead of plugin_frontend/
//
// Each module becomes a function scope run once, in dependency order, returning its exports;
// `import { a, b as c } from "./x.js"` becomes `const { a, b: c } = <x's exports>`. Only
// what this project's modules use is accepted: named imports and `import * as`, relative
// specifiers, `export` on declarations and `export { ... }` lists. Anything else (default
// exports, re-exports, dynamic import(), bare specifiers, import cycles) is an error.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, posix, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const FRONTEND = resolve(dirname(fileURLToPath(import.meta.url)), "..", "plugin_frontend");
export const ENTRY = "main.js";
// where the plugin serves /index.js from (tb_iotrace/plugin/plugin.py BUNDLE_PATH)
export const OUTPUT = resolve(FRONTEND, "..", "tb_iotrace", "plugin", "frontend-build", "index.js");
const CSS = "style.css";
const CSS_SLOT = "const INLINE_CSS = null;";

const IMPORT_RE = /^import\s+(\{[^}]*\}|\*\s+as\s+[A-Za-z_$][\w$]*)\s+from\s+(["'])([^"']+)\2\s*;?[ \t]*$/gm;
const DECL_RE = /^export\s+((?:async\s+)?function\*?|class|const|let|var)\s+([A-Za-z_$][\w$]*)/gm;
const LIST_RE = /^export\s*\{([^}]*)\}\s*;?[ \t]*$/gm;

class BundleError extends Error {}

function moduleVar(path) {
  return "__m_" + path.replace(/[^A-Za-z0-9]/g, "_");
}

function names(list, where) {
  return list.split(",").map((s) => s.trim()).filter(Boolean).map((s) => {
    const m = /^([A-Za-z_$][\w$]*)(?:\s+as\s+([A-Za-z_$][\w$]*))?$/.exec(s);
    if (!m) throw new BundleError(`${where}: cannot read ${JSON.stringify(s)}`);
    return [m[1], m[2] || m[1]];
  });
}

/** One module's source -> {body, imports: [path], exports: [name]} (paths relative to the frontend root). */
function transform(path, source) {
  const imports = [];
  let body = source.replace(/\r\n/g, "\n").replace(IMPORT_RE, (_, what, _q, spec) => {
    if (!spec.startsWith("./") && !spec.startsWith("../")) throw new BundleError(`${path}: import of ${spec} (only relative imports are bundled)`);
    const target = posix.normalize(posix.join(posix.dirname(path), spec));
    if (target.startsWith("..")) throw new BundleError(`${path}: ${spec} is outside plugin_frontend/`);
    imports.push(target);
    if (what.startsWith("*")) return `const ${what.replace(/^\*\s+as\s+/, "")} = ${moduleVar(target)};`;
    const pairs = names(what.slice(1, -1), path).map(([a, b]) => (a === b ? a : `${a}: ${b}`));
    return `const { ${pairs.join(", ")} } = ${moduleVar(target)};`;
  });
  const exports = [];
  body = body.replace(DECL_RE, (_, kind, name) => { exports.push(name); return `${kind} ${name}`; });
  body = body.replace(LIST_RE, (_, list) => {
    for (const [local, exported] of names(list, path)) {
      if (local !== exported) throw new BundleError(`${path}: export renaming (${local} as ${exported}) is not supported`);
      exports.push(local);
    }
    return "";
  });
  const code = body.split("\n").filter((l) => !/^\s*(\/\/|\*|\/\*)/.test(l)).join("\n");  // not comments
  const left = /^(export|import)\b.*$/m.exec(code) || /\bimport\s*\(.*$/m.exec(code);
  if (left) throw new BundleError(`${path}: unsupported module syntax: ${left[0].trim().slice(0, 80)}`);
  return { body, imports, exports };
}

/** The bundle's text for the sources under `root` (deterministic: depends on their bytes only). */
export function build(root = FRONTEND) {
  const mods = new Map();  // path -> transformed, in dependency order (post-order)
  const active = new Set();
  const visit = (path, from) => {
    if (mods.has(path)) return;
    if (active.has(path)) throw new BundleError(`import cycle through ${path} (from ${from})`);
    active.add(path);
    let source;
    try {
      source = readFileSync(join(root, path), "utf8");
    } catch (e) {
      throw new BundleError(`${from}: cannot read ${path} (${e.code || e.message})`);
    }
    if (path === ENTRY) {
      const at = source.split(CSS_SLOT).length - 1;
      if (at !== 1) throw new BundleError(`${ENTRY} must contain \`${CSS_SLOT}\` exactly once (found ${at})`);
      const css = readFileSync(join(root, CSS), "utf8").replace(/\r\n/g, "\n");
      source = source.replace(CSS_SLOT, `const INLINE_CSS = ${JSON.stringify(css)};`);
    }
    const m = transform(path, source);
    for (const dep of m.imports) visit(dep, path);
    active.delete(path);
    mods.set(path, m);
  };
  visit(ENTRY, "(entry)");
  const out = [
    `// GENERATED from plugin_frontend/${ENTRY}, the modules it imports and ${CSS} by`,
    "// tools/bundle_frontend.mjs: a build output, do not edit; change the sources and run",
    "// `node tools/bundle_frontend.mjs` (or `./dev.sh setup`, or `pip install`).",
    `// Modules, in evaluation order: ${[...mods.keys()].join(", ")}`,
    "",
  ];
  for (const [path, m] of mods) {
    out.push(`// ---- ${path}`);
    out.push(`const ${moduleVar(path)} = (() => {`);
    out.push(m.body.replace(/\s+$/, ""));
    out.push(`return { ${m.exports.join(", ")} };`);
    out.push("})();", "");
  }
  const entry = mods.get(ENTRY);
  out.push(`export const { ${entry.exports.join(", ")} } = ${moduleVar(ENTRY)};`, "");
  return out.join("\n");
}

function main(argv) {
  const at = argv.indexOf("--out");
  const target = at >= 0 && argv[at + 1] ? resolve(argv[at + 1]) : OUTPUT;
  const rootAt = argv.indexOf("--root");
  const root = rootAt >= 0 && argv[rootAt + 1] ? resolve(argv[rootAt + 1]) : FRONTEND;
  let text;
  try {
    text = build(root);
  } catch (e) {
    if (!(e instanceof BundleError)) throw e;
    console.error(`bundle_frontend: ${e.message}`);
    return 2;
  }
  let old = null;
  try { old = readFileSync(target, "utf8"); } catch (_) { /* first build */ }
  if (argv.includes("--check")) {
    if (old === text) { console.log(`${relative(process.cwd(), target)} is up to date`); return 0; }
    console.error(`${relative(process.cwd(), target)} is ${old === null ? "missing" : "stale"}: run node tools/bundle_frontend.mjs`);
    return 1;
  }
  if (old !== text) {
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, text);
  }
  console.log(`${relative(process.cwd(), target)}: ${text.length} bytes${old === text ? " (unchanged)" : ""}`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
