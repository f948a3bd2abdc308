// Decoder of the server's packed answers (tb_iotrace/plugin/packed.py): "TBIO", a uint32
// header length, a JSON header, then columns of little-endian numbers at 8-byte aligned
// offsets. Each column becomes a typed-array view on the received buffer (no copy).

const MAGIC = [0x54, 0x42, 0x49, 0x4f]; // "TBIO"
const TYPES = { i8: Int8Array, i16: Int16Array, i32: Int32Array, f64: Float64Array };
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** {fields, columns: {name: TypedArray}} of a packed answer (an ArrayBuffer). */
export function unpack(buffer) {
  const bytes = new Uint8Array(buffer);
  if (bytes.length < 8 || MAGIC.some((b, i) => bytes[i] !== b)) throw new Error("not a packed answer");
  const n = new DataView(buffer).getUint32(4, true);
  if (8 + n > bytes.length) throw new Error("packed answer truncated");
  const fields = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const base = Math.ceil((8 + n) / 8) * 8;
  const columns = {};
  for (const [name, dtype, length, offset] of fields.columns) {
    const T = TYPES[dtype];
    if (!T) throw new Error(`packed answer: unknown column type ${dtype}`);
    const at = base + offset;
    if (at + length * T.BYTES_PER_ELEMENT > buffer.byteLength) throw new Error("packed answer truncated");
    columns[name] = LITTLE || T.BYTES_PER_ELEMENT === 1 ? new T(buffer, at, length) : swapped(buffer, at, length, dtype);
  }
  delete fields.columns;
  return { fields, columns };
}

/** A column read value by value (a big-endian machine). */
function swapped(buffer, at, length, dtype) {
  const dv = new DataView(buffer, at);
  const T = TYPES[dtype];
  const out = new T(length);
  const get = { i16: (i) => dv.getInt16(2 * i, true), i32: (i) => dv.getInt32(4 * i, true), f64: (i) => dv.getFloat64(8 * i, true) }[dtype];
  for (let i = 0; i < length; i++) out[i] = get(i);
  return out;
}

/**
 * Columns named "<group>.<key>" gathered into objects: {segments: {lane, ...}, items: {...}}
 * merged into the fields (the shape of the JSON answer).
 */
export function nest({ fields, columns }) {
  const out = { ...fields };
  for (const [name, col] of Object.entries(columns)) {
    const dot = name.indexOf(".");
    if (dot < 0) { out[name] = col; continue; }
    const g = name.slice(0, dot);
    (out[g] || (out[g] = {}))[name.slice(dot + 1)] = col;
  }
  return out;
}
