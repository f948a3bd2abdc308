// Fetches the plugin's routes (relative URLs: the page's <base> is plugin/iotrace/).

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body || {};
  }
}

export async function getJson(route, params = {}, signal = undefined) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const url = `./${route}${q.toString() ? "?" + q.toString() : ""}`;
  let resp;
  try {
    resp = await fetch(url, { signal, headers: { Accept: "application/json" } });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(0, `cannot reach TensorBoard (${e.message})`);
  }
  let body = null;
  try { body = await resp.json(); } catch (_) { body = null; }
  if (!resp.ok) {
    const msg = (body && body.error) || `${resp.status} ${resp.statusText}`;
    throw new ApiError(resp.status, msg, body);
  }
  return body;
}
