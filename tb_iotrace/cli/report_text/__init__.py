"""The report as text, in one place: :mod:`.document` draws a report's whole document from
:mod:`.host_text` (a host), :mod:`.file_tables` (its files and verdict), :mod:`.storage_tables`
(objects, endpoints) and :mod:`.job_text` (a run of several hosts, jobs' windows)."""
