// Colours of the tab: the timeline palette, I/O calls by kind, and stable colours for names.
// Pure (no DOM).

export const COLORS = {
  bg: "#ffffff",
  header: "#eef1f5",
  headerText: "#3c4650",
  laneAlt: "#f8f9fb",
  stepA: "rgba(255, 193, 7, 0.10)",
  stepB: "rgba(255, 193, 7, 0.04)",
  stepLine: "rgba(200, 140, 0, 0.55)",
  read: "#2b7bb9",
  write: "#e8853a",
  meta: "#8d99a6",
  error: "#d62728",
  select: "#111111",
  highlight: "#c2185b",
};

/** Colour of an I/O call by its function name: errors red, writes orange, reads blue, the rest grey. */
export function ioColor(op, err) {
  if (err) return COLORS.error;
  if (/write|fsync|sync/.test(op)) return COLORS.write;
  if (/read/.test(op)) return COLORS.read;
  return COLORS.meta;
}

/** Stable colour from a string (FNV-1a hash -> HSL hue), for op names. */
export function hashColor(s, sat = 55, light = 62) {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
  return `hsl(${(h >>> 0) % 360}, ${sat}%, ${light}%)`;
}
