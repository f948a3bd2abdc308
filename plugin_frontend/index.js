// Entry point loaded by TensorBoard's plugin iframe (<base href="plugin/iotrace/">):
// `import("./index.js").then((m) => m.render())`. Everything else is served by the
// plugin itself under ./static/ (plain ES modules, no build step, no CDN).

export async function render() {
  const css = document.createElement("link");
  css.rel = "stylesheet";
  css.href = "./static/style.css";
  document.head.appendChild(css);
  // Fetch every module at once instead of discovering them import by import.
  const modules = ["app", "api", "dom", "table", "charts", "findings", "timeline/timeline",
                   "timeline/coords", "timeline/tracks", "timeline/draw"];
  const loaded = await Promise.all(modules.map((m) => import(`./static/${m}.js`)));
  const { App } = loaded[0];
  const root = document.createElement("div");
  root.id = "iotrace-root";
  document.body.appendChild(root);
  const app = new App(root);
  window.__iotrace = app; // for tests and benchmarks
  await app.start();
  return app;
}
