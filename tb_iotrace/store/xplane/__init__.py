"""XPlane (TensorFlow profiler capture) reading and writing, without TensorFlow.

- :mod:`._proto`: message classes built at import time from the schema in ``xplane.proto``.
- :mod:`tb_iotrace.store.xplane.read_xspace`: ``load_xspace``, columnar plane views, stats, clocks.
- :mod:`.iotrace`: the ``IoTrace`` exchanged with the capture side.
- :mod:`.schema`: the names the I/O data uses in a capture (stat, lines, event stats, formats).
- :mod:`.encode`: put an ``IoTrace`` into an XSpace (``add_io_to_space``, ``io_space_bytes``);
  the module docstring says where the I/O lines go and why. :mod:`.merge`: into a saved
  capture file (``merge_into_capture``). :mod:`tb_iotrace.store.xplane.read_io`: read it back (``read_io_data``).
- :mod:`tb_iotrace.model.columnar`: the columnar reader of a whole capture file (numpy columns, no protobuf
  object per event; the plugin's and the analysis' reader).
- :mod:`.wire`: protobuf wire-format helpers.
"""

from tb_iotrace.store.xplane._proto import XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata
from tb_iotrace.store.xplane.iotrace import IoTrace, ThreadInfo
from tb_iotrace.store.xplane.encode import add_io_to_space, io_space_bytes, remove_io_data
from tb_iotrace.store.xplane.read_io import read_io_data, read_io_info
from tb_iotrace.store.xplane.merge import MergeResult, cache_paths, merge_into_capture
from tb_iotrace.store.xplane.read_xspace import HOST_PLANE, TASK_ENV_PLANE, LineColumns, PlaneColumns, XPlaneError, absolute_ns, columns, find_plane, find_planes, line_columns, load_xspace, parse_xspace, profile_start_ns, profile_stop_ns, relative_ps, stat_value, stats_dict
from tb_iotrace.store.xplane.schema import DEFAULT_MAX_EVENTS, IO_STAT, LINE_PREFIX, XPLANE_SUFFIX, thread_line_id

__all__ = [
    "DEFAULT_MAX_EVENTS", "HOST_PLANE", "IO_STAT", "LINE_PREFIX", "TASK_ENV_PLANE", "XPLANE_SUFFIX",
    "IoTrace", "LineColumns", "MergeResult", "PlaneColumns", "ThreadInfo",
    "XEvent", "XEventMetadata", "XLine", "XPlane", "XPlaneError", "XSpace", "XStat",
    "XStatMetadata",
    "absolute_ns", "add_io_to_space", "cache_paths", "columns", "io_space_bytes", "find_plane", "find_planes",
    "line_columns", "load_xspace", "merge_into_capture", "parse_xspace", "profile_start_ns",
    "profile_stop_ns", "read_io_data", "read_io_info", "relative_ps", "remove_io_data",
    "stat_value", "stats_dict", "thread_line_id",
]
