"""The PyTorch recording's main process: its end of each DataLoader worker's channel
(:mod:`.channels`), the profiler's windows (:mod:`.profiler_window`, the
hooks into torch that start and stop them, :mod:`.hooks`), the ``on_trace_ready`` handler that
writes each window's trace (:mod:`.handler`), the DataLoaders a window iterated
(:mod:`.loaders`), and the windows tb_iotrace takes itself at step boundaries
(:mod:`.step_windows`, :mod:`.auto_window`)."""
