"""TensorBoard "I/O" tab (plugin name ``iotrace``), registered through the
``tensorboard_plugins`` entry point as ``tb_iotrace.plugin:IoTracePlugin``.

Layout: :mod:`.decode` (columnar XSpace decoding), :mod:`.model` (lanes, I/O table,
counters), :mod:`.lod` (level-of-detail merging), :mod:`.queries` (the routes as pure
``*_impl`` functions), :mod:`.logdir` (run discovery, name validation, capture cache),
:mod:`.plugin` (the TBPlugin and its thin HTTP handlers). The frontend lives in
``plugin_frontend/`` at the repository root (``static`` here links to it; wheels copy it).

Importing this package never imports TensorFlow or the native module.
"""

from .plugin import ALL_HOSTS, PLUGIN_NAME, IoTracePlugin

__all__ = ["ALL_HOSTS", "IoTracePlugin", "PLUGIN_NAME"]
