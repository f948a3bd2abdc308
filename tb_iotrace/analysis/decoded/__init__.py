"""A capture decoded into columns as the tab shows it: lanes, the I/O table, the Darshan counters
and the steps (:mod:`.tab_model`, of a profile capture :mod:`.tab_xplane`, of a whole-run record
:mod:`.tab_record`, of a PyTorch trace :mod:`.tab_kineto`), and the capture's per-host row computed
from them (:mod:`.host_row`). Below the plugin, so that the recording side's summary of a capture
it has just written (:mod:`tb_iotrace.analysis.landed`) is the tab's row without the plugin."""
