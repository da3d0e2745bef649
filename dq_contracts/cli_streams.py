"""The command's standard streams while it runs (cli.main): a write that fails, to a closed pipe
(`| head`) or a full disk, ends nothing, so the command still reaches its own exit code; main then
says what could not be written."""

from __future__ import annotations


class Lost:
    """What a standard stream could not take: a closed pipe, or the first other failure (`error`)."""

    def __init__(self) -> None:
        self.closed_pipe, self.error = False, None

    def failed(self, exc: OSError) -> None:
        if isinstance(exc, BrokenPipeError):
            self.closed_pipe = True
        elif self.error is None:
            self.error = exc


class Guarded:
    """A standard stream whose failed write ends nothing: the command runs to its end and keeps its
    exit code. After a closed pipe (`| head`) or a failure (a full disk, EIO) the rest is dropped; the
    failure is said at the end (main). `buffer` (the JUnit report's bytes) shares the stream's fate."""

    def __init__(self, stream, lost: Lost | None = None) -> None:
        self._stream, self.lost = stream, lost or Lost()

    def _guarded(self, do, default):
        if self.lost.closed_pipe or self.lost.error is not None:
            return default
        try:
            return do()
        except OSError as exc:
            self.lost.failed(exc)
            return default

    def write(self, data):
        return self._guarded(lambda: self._stream.write(data), len(data))

    def flush(self) -> None:
        self._guarded(self._stream.flush, None)

    @property
    def buffer(self):
        return Guarded(self._stream.buffer, self.lost)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
