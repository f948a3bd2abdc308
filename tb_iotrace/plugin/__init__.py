"""TensorBoard "I/O" tab (plugin name ``iotrace``), registered through the
``tensorboard_plugins`` entry point as ``tb_iotrace.plugin:IoTracePlugin``.

Layout: :mod:`tb_iotrace.model.tab.columns` (lanes, I/O table, counters, from :mod:`tb_iotrace.model.columnar`),
:mod:`tb_iotrace.model.tab.of_xplane`, :mod:`~tb_iotrace.model.tab.of_record`, :mod:`~tb_iotrace.model.tab.of_kineto` (a capture, a whole-run record, a PyTorch trace decoded into them, by the kind :mod:`tb_iotrace.model.source_kinds` says), :mod:`tb_iotrace.plugin.level_of_detail` (level-of-detail merging),
:mod:`tb_iotrace.plugin.request_view` (one host or all hosts of a run on one clock), :mod:`tb_iotrace.plugin.endpoints` (the endpoints as
pure ``*_impl`` functions, one module each), :mod:`.findings_runner` (findings in a child
process, cached), :mod:`.cache` (the logdir scan and loaded captures, cached; the scan itself
is :mod:`tb_iotrace.store.logdir`), :mod:`.plugin` (the TBPlugin and its thin HTTP handlers),
:mod:`.synthetic` (synthetic I/O
merged into real captures, for tests and benchmarks). The frontend lives in
``plugin_frontend/`` at the repository root: plain ES modules, nothing fetched from
outside; ``/index.js`` is their committed bundle (``tools/bundle_frontend.mjs``, one request
for the tab's code) (``static`` here is a link to it; wheels copy the files through the
``plugin/static/**/*`` package-data glob).

Data flow::

    <logdir>/[<tb run>/]plugins/profile/<session>/<host>.xplane.pb
      |  logdir.scan (bounded, no symlinks out)      -> /runs
      |  cache.LogdirIndex.capture (lazy; cached by size and mtime; prefetch of the newest
      |  run when TensorBoard lists plugins)
      v
    xplane.columnar.decode_xspace: the file read whole + numpy (the codecs of tb_iotrace._codec); plane metadata through protobuf, events decoded
      column-wise; I/O lines (``I/O ...`` lines of /host:CPU) with their stats by name
      v
    model.TabCapture: lanes (host threads, /device:* lines, I/O per thread or per file), each
      sorted by (nesting row, start) with running max ends; the I/O table (start, end, op,
      path, offset, sizes, fd, errno, tid); Darshan counters as a matrix; steps
      v
    impl.*.*_impl (pure)  ->  plugin handlers (JSON, 400/404/422)  ->  plugin_frontend
      /capture once per run/host: lanes, extent, steps, messages
      /timeline per view change: per row, events in [start, end] merged below one pixel,
        for the lanes on screen (``lanes=``)
      /bandwidth (aligned under the timeline), /files, /histograms, /steps, /findings,
      /hosts (the per-host table of "All hosts")
      /event on click (stats of host/device events read back from the file by byte range)

Importing this package never imports TensorFlow or the native shim (tb_iotrace._native).
"""

from tb_iotrace.plugin.plugin import ALL_HOSTS, PLUGIN_NAME, IoTracePlugin

__all__ = ["ALL_HOSTS", "IoTracePlugin", "PLUGIN_NAME"]
