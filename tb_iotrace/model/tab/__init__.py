"""A source decoded into columns as the I/O tab shows it: lanes, the I/O table, the Darshan
counters and the steps (:mod:`.columns`), read from a profile capture (:mod:`.of_xplane`), a
whole-run record (:mod:`.of_record`) or a PyTorch trace (:mod:`.of_kineto`), one reader per
format; :func:`.load.load_any` picks the reader by the kind :mod:`tb_iotrace.model.source_kinds`
says a listed file is. The tab, the plugin's summary children and the recording side's summary of
a capture it has just written (:mod:`tb_iotrace.analysis.landed`) all open sources through here."""
