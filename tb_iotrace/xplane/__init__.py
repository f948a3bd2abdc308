"""XPlane (TensorFlow profiler capture) reading and writing, without TensorFlow.

- :mod:`._proto`: message classes built at import time from the schema in ``xplane.proto``.
- :mod:`.reader`: ``load_xspace``, columnar plane views, stats, clocks.
- :mod:`.iotrace`: the ``IoTrace`` exchanged with the capture side.
- :mod:`.iowriter`: put an ``IoTrace`` into a capture (``merge_into_capture``) and read it
  back (``read_io_data``); the module docstring says where the I/O lines go and why.
"""

from ._proto import XEvent, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata
from .iotrace import IoTrace, ThreadInfo
from .iowriter import (DEFAULT_MAX_EVENTS, IO_STAT, LINE_PREFIX, MergeResult, add_io_to_space,
                       cache_paths, io_space_bytes, merge_into_capture, read_io_data, read_io_info, remove_io_data,
                       thread_line_id)
from .reader import (HOST_PLANE, TASK_ENV_PLANE, LineColumns, PlaneColumns, XPlaneError,
                     absolute_ns, columns, find_plane, find_planes, line_columns, load_xspace,
                     parse_xspace, profile_start_ns, profile_stop_ns, relative_ps, stat_value,
                     stats_dict)

__all__ = [
    "DEFAULT_MAX_EVENTS", "HOST_PLANE", "IO_STAT", "LINE_PREFIX", "TASK_ENV_PLANE",
    "IoTrace", "LineColumns", "MergeResult", "PlaneColumns", "ThreadInfo",
    "XEvent", "XEventMetadata", "XLine", "XPlane", "XPlaneError", "XSpace", "XStat",
    "XStatMetadata",
    "absolute_ns", "add_io_to_space", "cache_paths", "columns", "io_space_bytes", "find_plane", "find_planes",
    "line_columns", "load_xspace", "merge_into_capture", "parse_xspace", "profile_start_ns",
    "profile_stop_ns", "read_io_data", "read_io_info", "relative_ps", "remove_io_data",
    "stat_value", "stats_dict", "thread_line_id",
]
