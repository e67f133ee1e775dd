"""Where an archive member's bytes go as they are read: hashed, and written to the spool, in another thread when the
member is large (decompression and writing then overlap)."""

from __future__ import annotations

import hashlib
import queue
import threading
from typing import IO, Optional


class Sink:
    """Hashes blocks and writes them to `out` (when there is one), in a thread of its own when `threaded`;
    an error there is raised here, at the next block or at the end."""

    def __init__(self, out: Optional[IO[bytes]], threaded: bool) -> None:
        self.digest = hashlib.sha256()
        self._out = out
        self._queue: Optional[queue.Queue[Optional[bytes]]] = queue.Queue(maxsize=4) if threaded else None
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._drain, daemon=True) if threaded else None

    def __enter__(self) -> Sink:
        if self._thread is not None:
            self._thread.start()
        return self

    def _consume(self, block: bytes) -> None:
        self.digest.update(block)
        if self._out is not None:
            self._out.write(block)

    def _drain(self) -> None:
        assert self._queue is not None
        while (block := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self._consume(block)
                except BaseException as error:  # kept to be raised in the reading thread; the queue is still emptied
                    self._error = error

    def put(self, block: bytes) -> None:
        if self._error is not None:
            raise self._error
        if self._queue is None:
            self._consume(block)
        else:
            self._queue.put(block)

    def __exit__(self, *exc: object) -> None:
        if self._queue is not None and self._thread is not None:
            self._queue.put(None)
            self._thread.join()
        if self._error is not None and exc[0] is None:
            raise self._error
