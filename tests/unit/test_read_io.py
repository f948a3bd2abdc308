"""tb_iotrace.store.xplane.read_io: the I/O record and trace read back from an XSpace in memory,
also after TensorFlow merged our plane into its host plane (helpers: test_xplane)."""
from __future__ import annotations

from tb_iotrace.store import xplane as X

from test_xplane import T0, assert_same_rows, make_trace


def test_round_trip_in_memory(gpu_capture):
    trace = make_trace(3000, T0 + 10_000, dropped=5)
    space = X.XSpace.FromString(gpu_capture.read_bytes())
    info = X.add_io_to_space(space, trace, start_ns=T0)
    assert info["num_events"] == 3000 and info["dropped"] == 5
    back = X.read_io_data(space)
    assert_same_rows(trace, back)
    assert back.threads == trace.threads
    assert back.dropped == 5 and back.counters == trace.counters
    # the space still serializes and TF-compatible bytes parse again
    again = X.parse_xspace(space.SerializeToString())
    assert_same_rows(trace, X.read_io_data(again))


def renumber_like_tensorflow_merge(space, shift: int, profile_start: int) -> None:
    """What TF does to our plane when it merges it into /host:CPU: new metadata ids,
    display_id dropped, timestamps normalized to the profile start."""
    plane = space.planes[0]
    ev_md = {k: (md.name, md.display_name) for k, md in plane.event_metadata.items()}
    st_md = {k: md.name for k, md in plane.stat_metadata.items()}
    plane.ClearField("event_metadata")
    plane.ClearField("stat_metadata")
    for k, (name, display) in ev_md.items():
        plane.event_metadata[k + shift].id = k + shift
        plane.event_metadata[k + shift].name = name
    for k, name in st_md.items():
        plane.stat_metadata[k + shift].id = k + shift
        plane.stat_metadata[k + shift].name = name
    for k in range(1, shift):  # TF's own stats now sit at our old ids
        plane.stat_metadata[k].id = k
        plane.stat_metadata[k].name = f"tf_stat_{k}"
    for stat in plane.stats:
        stat.metadata_id += shift
    for line in plane.lines:
        line.display_id = 0
        line.timestamp_ns -= profile_start
        for ev in line.events:
            ev.metadata_id += shift
            for st in ev.stats:
                st.metadata_id += shift
                if st.WhichOneof("value") == "ref_value":
                    st.ref_value += shift


def test_read_after_tensorflow_style_merge():
    trace = make_trace(600, T0 + 5_000_000, nthreads=2, dropped=1)
    space = X.XSpace()
    X.add_io_to_space(space, trace, start_ns=0)  # absolute times, as recording.tensorflow writes them
    assert space.planes[0].lines[0].timestamp_ns > T0
    renumber_like_tensorflow_merge(space, 100, T0)
    back = X.read_io_data(space)
    assert_same_rows(trace, back)
    assert back.dropped == 1 and back.counters == trace.counters
    # replacing it must not delete what now belongs to TensorFlow
    trace2 = make_trace(10, T0 + 6_000_000, nthreads=1, seed=4)
    X.add_io_to_space(space, trace2, start_ns=T0)
    plane = space.planes[0]
    assert all(plane.stat_metadata[k].name == f"tf_stat_{k}" for k in range(1, 100))
    assert sum(ln.name.startswith("I/O ") for ln in plane.lines) == 1
    assert_same_rows(trace2, X.read_io_data(space))


def test_read_io_info_matches_host_lines_later():
    pthread_id = 140279877782400
    trace = make_trace(20, T0 + 1_000, nthreads=1)
    tid = int(trace.tid[0])
    trace.threads = {tid: X.ThreadInfo(pthread_id, "python")}
    space = X.XSpace()
    X.add_io_to_space(space, trace, start_ns=T0)  # no host lines to match yet
    assert X.read_io_info(space)["lines"][0]["host_line_id"] is None
    host = space.planes[0]
    line = host.lines.add(id=X.thread_line_id(pthread_id), name="python")
    info = X.read_io_info(space)["lines"][0]
    assert (info["host_line_id"], info["host_line_name"]) == (line.id, "python")
