"""The tab's columnar model of a file a logdir scan listed, decoded by the reader of its kind."""
from __future__ import annotations

from typing import Callable

from tb_iotrace.model.source_kinds import CAPTURE, KINETO, RECORD, listed_kind
from tb_iotrace.model.tab.columns import TabCapture
from tb_iotrace.model.tab.of_kineto import decode_kineto
from tb_iotrace.model.tab.of_record import decode_record
from tb_iotrace.model.tab.of_xplane import decode_xplane

__all__ = ["load_any"]

# the tab's reader of each kind a scan lists
_DECODERS: dict[str, Callable[[str, str], TabCapture]] = {CAPTURE: decode_xplane, KINETO: decode_kineto, RECORD: decode_record}


def load_any(path: str, host: str) -> TabCapture:
    """A file the scan listed, decoded for the tab as the kind the model says it is
    (:func:`tb_iotrace.model.source_kinds.listed_kind`): a profile capture (``.xplane.pb``),
    a whole-run record (``.json``) or a PyTorch trace (``.pt.trace.json[.gz]``)."""
    return _DECODERS[listed_kind(path)](path, host)
