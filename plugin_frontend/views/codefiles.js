// Code loading apart from data files in the /files answer (the rule is the backend's,
// tb_iotrace/base/codepaths.py: `files.code[i]`): pure, so node tests it.
import { fmtBytes } from "../lib/format.js";

/** The /files answer with only the rows of data files (or all rows when `showAll`). */
export function dataFiles(files, showAll = false) {
  if (!files || !files.rows || showAll || !files.code) return files;
  const keep = [];
  for (let i = 0; i < files.rows; i++) if (!files.code[i]) keep.push(i);
  const pick = (a) => keep.map((i) => a[i]);
  const columns = {};
  for (const [k, v] of Object.entries(files.columns)) columns[k] = pick(v);
  return { ...files, rows: keep.length, path: pick(files.path), module: pick(files.module), host: pick(files.host),
           code: pick(files.code), values: pick(files.values), columns,
           message: keep.length ? files.message : "Only code loading in this capture: no data file was read or written." };
}

/** One line on the code loading the tables leave out ("" when there is none). */
export function codeLine(files) {
  const c = files && files.code_loading;
  if (!c || !c.files) return "";
  return `Code loading (Python imports, shared libraries, interpreter, framework config): ${c.files} files, ` +
         `${fmtBytes(c.bytes_read)} read, ${c.time_s.toFixed(3)} s in calls`;
}
