// The tab's entry module. TensorBoard's plugin iframe (<base href="plugin/iotrace/">) runs
// `import("./index.js").then((m) => m.render())`; /index.js is this module bundled with
// everything it imports and style.css (tools/bundle_frontend.mjs), so the tab's code
// arrives in one request instead of a waterfall of module fetches. Run unbundled
// (./static/main.js), it links ./static/style.css instead.

import { App } from "./app.js";

const INLINE_CSS = null; // the bundle puts style.css here

export async function render() {
  if (INLINE_CSS === null) {
    document.head.appendChild(Object.assign(document.createElement("link"), { rel: "stylesheet", href: "./static/style.css" }));
  } else {
    document.head.appendChild(Object.assign(document.createElement("style"), { textContent: INLINE_CSS }));
  }
  const root = document.createElement("div");
  root.id = "iotrace-root";
  document.body.appendChild(root);
  const app = new App(root);
  window.__iotrace = app; // for tests and benchmarks
  await app.start();
  return app;
}
