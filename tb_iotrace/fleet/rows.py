"""The fleet tables' rows, from the report's per-host JSON document.

Each host of ``tb-iotrace report --json`` (``runs[].hosts[]``: a
:class:`tb_iotrace.analysis.host_result.HostResult` as a dict) becomes rows of six tables; new
keys of that document flow into ``hosts`` without a change here:

- ``files``: one row per file record: ``run``, ``host``, ``module``, ``path``,
  ``record_id`` (Darshan's id, unsigned 64-bit), ``rank`` (Darshan imports; else null),
  ``code`` (code loading, as the report marks it), ``mount_point`` and ``fs_type`` (from the
  capture's own mount table; null where the source has none), then one column per Darshan
  counter, named as Darshan names them (POSIX then STDIO, integers then floats: int64 and
  float64; null where the module has no such counter).
- ``hosts``: one row per host: ``run``, ``host``, the document's scalar keys (``kind``,
  ``source``, ``partial``, ``dropped``, ``nevents``, ``has_step_markers``, ``no_io_reason``),
  the per-host summary's keys (``bytes_read``, ..., ``files``, ``input_wait_pct``,
  ``span_ns``; its ``source`` as ``summary_source``), ``n_steps``, ``n_findings``, and every
  structured key (``totals``, ``code_loading``, ``untracked``, ``process``, ``notes``,
  ``timeseries``, ``verdict``, any other) as a JSON text column. A key this module does not
  know becomes a column of its own: numbers as float64, text, booleans, else JSON text.
- ``steps``: one row per step: ``run``, ``host`` and the step's keys (``collective_wait_ps``:
  the step's time in collectives, tb_iotrace.analysis.collectives; ``object_requests`` and
  ``object_bytes``: the object-storage requests that started in the step, null where the host
  made none).
- ``findings``: one row per finding: ``run``, ``host``, ``index`` (its place in the host's
  list), ``id``, ``severity``, ``title``, ``statement``, ``suggestion``; ``evidence``,
  ``files`` and ``ops`` as JSON text.
- ``checkpoints``: one row per checkpoint save or load (docs/checkpoints.md): ``run``, ``host``,
  ``rank`` (the process's, from its launcher; else null), ``index`` and the phase's keys
  (``kind``, ``start_ns``, ``end_ns``, ``finish_ns``, ``files``, ``bytes``, ``io_time_s``,
  ``fsync_time_s``, ``rename_time_s``, ``blocking_ns``, ``background_ns``, ``calls``,
  ``median_call_bytes``, ``path``, ``source``, ``fs_type``, ``mount_point``; ``paths`` as JSON
  text). The saves of a run's ranks are rows of the same run: ``GROUP BY run`` over
  overlapping saves compares them.
- ``objects``: one row per object a host requested (docs/objects.md): ``run``, ``host``,
  ``object``, ``service``, ``bucket``, ``key``, then the per-object counters (``OBJ_*`` int64,
  ``OBJ_F_*`` float64; tb_iotrace.model.object_counters).

Text that is not valid UTF-8 (a path read with ``surrogateescape``) is stored with ``\\xNN``
escapes, as the Darshan log export writes it (:func:`text`).
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tb_iotrace.analysis.mounts import MountTable, parse_mountinfo
from tb_iotrace.fleet.deps import require

TABLES = ("files", "hosts", "steps", "findings", "checkpoints", "objects")

# module -> (integer counter names, float counter names), Darshan's order (tb_iotrace.recording.opnames)
Layout = Mapping[str, tuple[Sequence[str], Sequence[str]]]

FILE_KEYS = (("run", "string"), ("host", "string"), ("module", "string"), ("path", "string"),
             ("record_id", "uint64"), ("rank", "int64"), ("code", "bool"), ("mount_point", "string"),
             ("fs_type", "string"))
HOST_KEYS = (("run", "string"), ("host", "string"), ("kind", "string"), ("source", "string"),
             ("partial", "bool"), ("dropped", "int64"), ("nevents", "int64"), ("has_step_markers", "bool"),
             ("no_io_reason", "string"), ("summary_source", "string"), ("bytes_read", "int64"),
             ("bytes_written", "int64"), ("read_time_s", "float64"), ("io_calls", "int64"), ("files", "int64"),
             ("input_wait_ns", "int64"), ("input_wait_pct", "float64"), ("span_ns", "int64"),
             ("n_steps", "int64"), ("n_findings", "int64"),
             ("totals", "json"), ("code_loading", "json"), ("untracked", "json"), ("process", "json"),
             ("notes", "json"), ("timeseries", "json"), ("verdict", "json"))
STEP_KEYS = (("run", "string"), ("host", "string"), ("index", "int64"), ("name", "string"),
             ("step_num", "int64"), ("start_ps", "int64"), ("end_ps", "int64"), ("duration_ps", "int64"),
             ("input_wait_ps", "int64"), ("input_wait_share", "float64"), ("io_bytes", "int64"),
             ("io_calls", "int64"), ("io_time_ps", "int64"), ("collective_wait_ps", "int64"),
             ("object_requests", "int64"), ("object_bytes", "int64"))
FINDING_KEYS = (("run", "string"), ("host", "string"), ("index", "int64"), ("id", "string"),
                ("severity", "string"), ("title", "string"), ("statement", "string"),
                ("suggestion", "string"), ("evidence", "json"), ("files", "json"), ("ops", "json"))
CHECKPOINT_KEYS = (("run", "string"), ("host", "string"), ("rank", "int64"), ("index", "int64"),
                   ("kind", "string"), ("start_ns", "int64"), ("end_ns", "int64"), ("finish_ns", "int64"),
                   ("files", "int64"), ("bytes", "int64"), ("io_time_s", "float64"), ("fsync_time_s", "float64"),
                   ("rename_time_s", "float64"), ("blocking_ns", "int64"), ("background_ns", "int64"),
                   ("calls", "int64"), ("median_call_bytes", "float64"), ("path", "string"), ("source", "string"),
                   ("fs_type", "string"), ("mount_point", "string"), ("paths", "json"))
# the document's keys that are tables of their own (not columns of ``hosts``)
OWN_TABLES = ("files", "steps", "findings", "checkpoints", "objects")


def _object_keys() -> list[tuple[str, str]]:
    from tb_iotrace.model.object_counters import object_records
    from tb_iotrace.store.objcolumns import COLUMNS

    one = object_records([dict.fromkeys(COLUMNS, 0) | {"object": "", "service": "", "bucket": "", "key": "",
                                                       "op": "GET", "error": "", "client": "", "status": 200,
                                                       "range_start": -1, "range_end": -1}])[0]
    return [("run", "string"), ("host", "string"), ("object", "string"), ("service", "string"),
            ("bucket", "string"), ("key", "string"), *((k, "int64") for k in one["counters"]),
            *((k, "float64") for k in one["fcounters"])]


OBJECT_KEYS = _object_keys()


def text(s: Any) -> str:
    """``s`` as valid UTF-8 text: bytes a name was read with (``surrogateescape``) as ``\\xNN``."""
    s = str(s)
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _clean(v: Any) -> Any:
    if isinstance(v, str):
        return text(v)
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, Mapping):
        return {text(k): _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def to_json(v: Any) -> str | None:
    """A structured value as JSON text (None stays null)."""
    return None if v is None else json.dumps(_clean(v), ensure_ascii=False, separators=(",", ":"))


def _arrow_type(pa: Any, kind: str) -> Any:
    return {"string": pa.string(), "json": pa.string(), "uint64": pa.uint64(), "int64": pa.int64(),
            "float64": pa.float64(), "bool": pa.bool_()}[kind]


def _convert(kind: str, v: Any) -> Any:
    if v is None:
        return None
    if kind == "json":
        return to_json(v)
    if kind == "string":
        return text(v)
    if kind == "bool":
        return bool(v)
    if kind == "float64":
        return float(v)
    return int(v)


def kind_of(values: Iterable[Any]) -> str | None:
    """The column kind of a key this module does not know (None: every value is null)."""
    kinds = set()
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            kinds.add("bool")
        elif isinstance(v, (int, float)):
            kinds.add("float64")
        elif isinstance(v, str):
            kinds.add("string")
        else:
            kinds.add("json")
    if not kinds:
        return None
    return kinds.pop() if len(kinds) == 1 else "json"


def _from_rows(fields: Sequence[Any], rows: Sequence[Mapping[str, Any]]) -> Any:
    """An Arrow table of ``rows`` (dicts; a missing key is null) with these fields, converted
    in one call (a column at a time costs 30x more on a host's handful of rows)."""
    pa = require("pyarrow")
    return pa.Table.from_struct_array(pa.array(rows, type=pa.struct(fields)))


def _table(keys: Sequence[tuple[str, str]], rows: Sequence[Mapping[str, Any]]) -> Any:
    """An Arrow table of ``rows``: the ``keys`` columns with their types, then every other
    key of the rows (:func:`kind_of`)."""
    pa = require("pyarrow")
    known = dict(keys)
    extra: dict[str, None] = {}
    for r in rows:
        extra.update((k, None) for k in r if k not in known)
    kinds = [(name, kind) for name, kind in [*keys, *((k, kind_of(r.get(k) for r in rows)) for k in extra)]
             if kind is not None]
    fields = [pa.field(name, _arrow_type(pa, kind)) for name, kind in kinds]
    return _from_rows(fields, [{name: _convert(kind, r.get(name)) for name, kind in kinds} for r in rows])


def _counter_keys(layout: Layout) -> list[tuple[str, str]]:
    out: dict[str, str] = {}
    for ints, floats in layout.values():
        out.update((k, "int64") for k in ints)
        out.update((k, "float64") for k in floats)
    return list(out.items())


def schema(table: str, layout: Layout) -> Any:
    """The columns every part of ``table`` has (a part may add columns of its own)."""
    keys = {"files": [*FILE_KEYS, *_counter_keys(layout)], "hosts": HOST_KEYS, "steps": STEP_KEYS,
            "findings": FINDING_KEYS, "checkpoints": CHECKPOINT_KEYS, "objects": OBJECT_KEYS}[table]
    return _table(keys, []).schema


def files_table(run: str, host: str, files: Iterable[Mapping[str, Any]], layout: Layout,
                mounts: str = "") -> Any:
    """The ``files`` rows of one host (``files``: the report document's file entries;
    ``mounts``: the capture's /proc/self/mountinfo text, "" when it has none)."""
    pa = require("pyarrow")
    table = MountTable(parse_mountinfo(mounts)) if mounts else None
    kinds = dict([*FILE_KEYS, *_counter_keys(layout)])
    rows = []
    for f in files:
        c, fc = f.get("counters") or {}, f.get("fcounters") or {}
        mp = table.lookup(f["path"]) if table is not None and isinstance(f["path"], str) else None
        row = {"run": text(run), "host": text(host), "module": text(f["module"]), "path": text(f["path"]),
               "record_id": int(f["record_id"]) if f.get("record_id") is not None else None,
               "rank": int(f["rank"]) if f.get("rank") is not None else None, "code": bool(f.get("code", False)),
               "mount_point": text(mp.mount_point) if mp is not None else None,
               "fs_type": text(mp.fs_type) if mp is not None else None}
        row.update((k, int(v)) for k, v in c.items())
        row.update((k, float(v)) for k, v in fc.items())
        for k in (*c, *fc):
            if k not in kinds:         # a counter the layout does not name (another Darshan)
                kinds[k] = "int64" if k in c else "float64"
        rows.append(row)
    return _from_rows([pa.field(k, _arrow_type(pa, kind)) for k, kind in kinds.items()], rows)


def host_table(run: str, doc: Mapping[str, Any]) -> Any:
    """The ``hosts`` row of one host document."""
    row: dict[str, Any] = {"run": run}
    for k, v in doc.items():
        if k in OWN_TABLES:
            continue
        if k == "summary" and isinstance(v, Mapping):
            for sk, sv in v.items():
                if sk == "host":
                    continue
                row["summary_" + sk if sk in doc and sk not in OWN_TABLES else sk] = sv
            continue
        row[k] = v
    row["n_steps"] = len(doc.get("steps") or [])
    row["n_findings"] = len(doc.get("findings") or [])
    return _table(HOST_KEYS, [row])


def steps_table(run: str, host: str, steps: Sequence[Mapping[str, Any]]) -> Any:
    return _table(STEP_KEYS, [{"run": run, "host": host, **s} for s in steps])


def findings_table(run: str, host: str, findings: Sequence[Any]) -> Any:
    rows = []
    for i, f in enumerate(findings):
        f = f if isinstance(f, Mapping) else {"statement": str(f)}
        rows.append({**f, "run": run, "host": host, "index": i})
    return _table(FINDING_KEYS, rows)


def checkpoints_table(run: str, host: str, phases: Sequence[Any], rank: Any = None) -> Any:
    """The ``checkpoints`` rows of one host: its saves and loads, with its rank."""
    rows = [{**p, "run": run, "host": host, "rank": rank if isinstance(rank, int) else None, "index": i}
            for i, p in enumerate(phases) if isinstance(p, Mapping)]
    return _table(CHECKPOINT_KEYS, rows)


def objects_table(run: str, host: str, objects: Mapping[str, Any] | None) -> Any:
    """The ``objects`` rows of one host: its per-object records (the report's ``objects``)."""
    rows = [{"run": run, "host": host, **{k: text(o[k]) for k in ("object", "service", "bucket", "key")},
             **(o.get("counters") or {}), **(o.get("fcounters") or {})}
            for o in ((objects or {}).get("objects") or []) if isinstance(o, Mapping)]
    return _table(OBJECT_KEYS, rows)


def host_tables(run: str, doc: Mapping[str, Any], layout: Layout, mounts: str = "") -> dict[str, Any]:
    """The rows of one host document, per table (a table without rows is left out)."""
    host = str(doc["host"])
    out = {"files": files_table(run, host, doc.get("files") or [], layout, mounts),
           "hosts": host_table(run, doc),
           "steps": steps_table(run, host, doc.get("steps") or []),
           "findings": findings_table(run, host, doc.get("findings") or []),
           "checkpoints": checkpoints_table(run, host, doc.get("checkpoints") or [],
                                            (doc.get("process") or {}).get("rank")),
           "objects": objects_table(run, host, doc.get("objects"))}
    return {k: t for k, t in out.items() if t.num_rows}
