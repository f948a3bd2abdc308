// Fetches the plugin's routes (relative URLs: the page's <base> is plugin/iotrace/).

import { nest, unpack } from "./lib/packed.js";

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body || {};
  }
}

function fetchRoute(route, params, signal, accept) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const url = `./${route}${q.toString() ? "?" + q.toString() : ""}`;
  return fetch(url, { signal, headers: { Accept: accept } }).catch((e) => {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, `cannot reach TensorBoard (${e.message})`);
  });
}

/** A packed answer (lib/packed.js), nested into the JSON answer's shape; errors come as JSON. */
export async function getPacked(route, params = {}, signal = undefined) {
  const resp = await fetchRoute(route, params, signal, "application/octet-stream, application/json");
  if (!resp.ok) {
    let body = null;
    try { body = await resp.json(); } catch (_) { body = null; }
    throw new ApiError(resp.status, (body && body.error) || `${resp.status} ${resp.statusText}`, body);
  }
  return nest(unpack(await resp.arrayBuffer()));
}

export async function getJson(route, params = {}, signal = undefined) {
  const resp = await fetchRoute(route, params, signal, "application/json");
  let body = null;
  try { body = await resp.json(); } catch (_) { body = null; }
  if (!resp.ok) {
    const msg = (body && body.error) || `${resp.status} ${resp.statusText}`;
    throw new ApiError(resp.status, msg, body);
  }
  return body;
}
