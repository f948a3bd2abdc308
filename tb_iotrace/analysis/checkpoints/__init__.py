"""Checkpoints: each save and load of a run found in its I/O calls, what it cost the training
loop, and how the ranks' saves compare (docs/checkpoints.md gives the rules).

- :mod:`.spans`: what the job called (hook spans on the host timeline, noted library calls);
- :mod:`.detection`: the phases, from those spans or from the files' shape (``checkpoint_phases``);
- :mod:`.waits`: orbax's ``wait_until_finished`` as part of a save's blocking time;
- :mod:`.facts`: what a phase needs to be compared across ranks (finish time, file system);
- :mod:`.phase_findings`: the host's findings about its phases, and the training time;
- :mod:`.phase_table`: the text report's table of the phases;
- :mod:`.ranks`: the run's saves across its ranks and the ``checkpoint-straggler`` finding.

The phases found once per analysis are kept on the analysis's
:class:`~tb_iotrace.analysis.context.Context` (``checkpoint_phases``), where the findings read them.
"""
