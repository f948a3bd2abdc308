"""A profile capture (``<host>.xplane.pb``) as a :class:`tb_iotrace.model.sources.Source`: its
XSpace, the I/O record tb_iotrace put in it, its profile window."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from tb_iotrace.model.source_kinds import CAPTURE, SourceError
from tb_iotrace.model.sources import Source

__all__ = ["CaptureSource"]


@dataclass
class CaptureSource(Source):
    """A profile capture (``<host>.xplane.pb``) of TensorFlow, JAX or a converted trace."""

    kind: ClassVar[str] = CAPTURE
    _space: Any = field(default=None, repr=False)
    _trace: Any = field(default=None, repr=False)
    _loaded: bool = field(default=False, repr=False)
    _read: Any = field(default=None, repr=False)     # use_reader's

    @property
    def has_timeline(self) -> bool:
        return True

    def use_reader(self, read: Any) -> None:
        self._read = read

    def _read_both(self) -> None:
        self._space, self._trace = self._read(self.path)    # its errors as the reader raises them
        self._loaded = True

    def window_origin(self) -> dict[str, Any] | None:
        from tb_iotrace.store.window_origin import read_origin

        return read_origin(self.path) if "://" not in self.path else None

    def space(self) -> Any:
        if self._space is None and self._read is not None:
            self._read_both()
        if self._space is None:
            from tb_iotrace.store.xplane import XPlaneError, load_xspace

            try:
                self._space = load_xspace(self.path)
            except XPlaneError as exc:
                raise SourceError(str(exc)) from None
        return self._space

    def io_trace(self) -> Any:
        if not self._loaded and self._read is not None:
            self._read_both()
        if not self._loaded:
            from tb_iotrace.store.xplane import read_io_data

            try:
                self._trace = read_io_data(self.space())
            except (ValueError, KeyError, TypeError) as exc:
                raise SourceError(f"{self.path}: unreadable I/O record ({exc})") from None
            self._loaded = True
        return self._trace

    def analysis_input(self) -> tuple[Any, Any] | None:
        tr = self.io_trace()
        return (self.space(), tr) if tr is not None else None

    def profile_bounds(self) -> dict[str, int | None] | None:
        """The profile window's start and stop (epoch ns; None when the capture has none)."""
        from tb_iotrace.store.xplane import profile_start_ns, profile_stop_ns

        return {"start_ns": profile_start_ns(self.space()), "stop_ns": profile_stop_ns(self.space())}

    def no_io_reason(self) -> str | None:
        """Why a capture without tb_iotrace's record holds no I/O (None when it has some)."""
        if self.io_trace() is not None:
            return None
        from tb_iotrace.store.xplane.origin import missing_io_reason

        return missing_io_reason(self.space().planes)

