"""Step markers of JAX captures: jax.profiler.StepTraceAnnotation marks its event with the
step-root stat ``_r`` whatever its name, and Keras 3 on JAX names its steps
"Profiled batch <n>" (TensorFlow's Keras: "Profiled batch" with no number)."""
from __future__ import annotations

from tb_iotrace.analysis.attribution import attribute
from tb_iotrace.store.xplane import HOST_PLANE, TASK_ENV_PLANE, IoTrace, ThreadInfo, XEventMetadata, XSpace, XStatMetadata, add_io_to_space, thread_line_id

BASE = 1_700_000_000_000_000_000
MS = 10**9   # ps


def capture(step_events: list[tuple[str, dict]]) -> XSpace:
    """A host line with the given step events (10 ms apart, 8 ms long) and one read in each."""
    sp = XSpace()
    env = sp.planes.add(id=1, name=TASK_ENV_PLANE)
    env.stat_metadata[1].CopyFrom(XStatMetadata(id=1, name="profile_start_time"))
    env.stats.add(metadata_id=1, uint64_value=BASE)
    host = sp.planes.add(id=2, name=HOST_PLANE)
    stat_ids = {"step_num": 1, "_r": 2, "other": 3}
    for name, sid in stat_ids.items():
        host.stat_metadata[sid].CopyFrom(XStatMetadata(id=sid, name=name))
    kinds: dict[str, int] = {}
    line = host.lines.add(id=thread_line_id(77), name="python", timestamp_ns=0)
    n = len(step_events)
    for k, (name, stats) in enumerate(step_events):
        mid = kinds.setdefault(name, len(kinds) + 1)
        host.event_metadata[mid].CopyFrom(XEventMetadata(id=mid, name=name))
        ev = line.events.add(metadata_id=mid, offset_ps=10 * k * MS, duration_ps=8 * MS)
        for s, v in stats.items():
            ev.stats.add(metadata_id=stat_ids[s], int64_value=v)
    starts = [BASE + 10 * k * MS // 1000 + 10**6 for k in range(n)]
    tr = IoTrace(op=["pread64"] * n, path=["/data/x"] * n, offset=[0] * n, requested=[100] * n,
                 returned=[100 + k for k in range(n)], fd=[3] * n, errno=[0] * n, start_ns=starts,
                 end_ns=[s + 1000 for s in starts], tid=[100] * n, threads={100: ThreadInfo(77, "python")},
                 counters=[])
    add_io_to_space(sp, tr, start_ns=BASE)
    return sp


def test_step_trace_annotation_of_any_name() -> None:
    sp = capture([("my_step", {"step_num": 5, "_r": 1}), ("my_step", {"step_num": 6, "_r": 1}),
                  ("not_a_step", {"other": 1})])
    att = attribute(sp)
    assert [(s.name, s.step_num) for s in att.steps] == [("my_step", 5), ("my_step", 6)]
    assert att.step.tolist() == [0, 1, -1]
    assert [s.io_bytes for s in att.steps] == [100, 101]


def test_keras_on_jax_profiled_batch_names() -> None:
    sp = capture([("Profiled batch 3", {}), ("Profiled batch 4", {}), ("Profiled batches", {})])
    att = attribute(sp)
    assert [(s.name, s.step_num) for s in att.steps] == [("Profiled batch 3", 3), ("Profiled batch 4", 4)]
    assert att.step.tolist() == [0, 1, -1]


def test_tensorflow_step_names_unchanged() -> None:
    # "train" with a step number, and Keras's "Profiled batch" without one, are step markers;
    # a "train" event without a step number is not
    sp = capture([("train", {"step_num": 0}), ("train", {"step_num": 1}), ("train", {})])
    assert [(s.name, s.step_num) for s in attribute(sp).steps] == [("train", 0), ("train", 1)]
    sp = capture([("Profiled batch", {}), ("Profiled batch", {}), ("train", {})])
    assert [(s.name, s.step_num) for s in attribute(sp).steps] == [("Profiled batch", None)] * 2


def test_one_kind_of_marker_is_the_steps() -> None:
    """tb_iotrace.model.stepwait's rule, as the tab's: of the marker kinds, the one seen
    most often is the steps (before, the report took every marker of any kind, so a capture
    with two kinds had steps the tab did not)."""
    sp = capture([("train", {"step_num": 0}), ("Profiled batch", {}), ("Profiled batch", {}),
                  ("Profiled batch", {})])
    assert [(s.name, s.step_num) for s in attribute(sp).steps] == [("Profiled batch", None)] * 3
