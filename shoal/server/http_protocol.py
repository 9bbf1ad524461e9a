"""The HTTP protocol `shoal up` serves the API with: uvicorn's httptools protocol, whose
answers leave in one socket write instead of two (issue 18).

Uvicorn writes a response's status line and headers as soon as the application sends
`http.response.start`, and its body with `http.response.body`: two `write` system calls per
answer, each of which, on loopback, runs the kernel's TCP path and wakes the client while
the event loop holds the GIL. Measured with `py-spy --gil` during a burst of submissions,
those two writes were ~27 % of the API's GIL time (the first, which wakes the client, most
of it). Here a response's head is held back until its first body part, which the
application sends in the same step of its task (Starlette's `Response` does), and both go
in one write. A head is never held past the current turn of the event loop: whatever sends
no body part at once (a stream that waits for its first event) has its head written at the
next turn, as good as at once. `100 Continue` and `101 Switching Protocols` are never held,
and closing, or any other write, sends a held head first, so bytes leave in the order they
were written.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

_HEAD_START = b"HTTP/1.1 "
_HEAD_END = b"\r\n\r\n"


class _CoalescingTransport(asyncio.Transport):
    """A transport that holds a response's head until the next write or the loop's next
    turn, whichever comes first, and otherwise passes everything to `inner`."""

    __slots__ = ("_held", "_inner", "_loop")

    def __init__(self, inner: asyncio.Transport) -> None:
        super().__init__()
        self._inner = inner
        self._held: bytes | None = None
        self._loop = asyncio.get_running_loop()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        held = self._held
        if held is not None:
            self._held = None
            self._inner.write(held + bytes(data))
            return
        if (isinstance(data, bytes) and data.startswith(_HEAD_START)
                and data.endswith(_HEAD_END) and data[9:10] != b"1"):  # not a 1xx
            self._held = data
            self._loop.call_soon(self._flush)
            return
        self._inner.write(data)

    def _flush(self) -> None:
        held, self._held = self._held, None
        if held is not None and not self._inner.is_closing():
            self._inner.write(held)

    def writelines(self, list_of_data: Any) -> None:
        self._flush()
        self._inner.writelines(list_of_data)

    def write_eof(self) -> None:
        self._flush()
        self._inner.write_eof()

    def can_write_eof(self) -> bool:
        return self._inner.can_write_eof()

    def close(self) -> None:
        self._flush()
        self._inner.close()

    def abort(self) -> None:
        self._held = None
        self._inner.abort()

    def is_closing(self) -> bool:
        return self._inner.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._inner.get_extra_info(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._inner.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._inner.get_protocol()

    def pause_reading(self) -> None:
        self._inner.pause_reading()

    def resume_reading(self) -> None:
        self._inner.resume_reading()

    def is_reading(self) -> bool:
        return self._inner.is_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._inner.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        return self._inner.get_write_buffer_size() + len(self._held or b"")

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._inner.get_write_buffer_limits()


class OneWriteHttpProtocol(HttpToolsProtocol):
    """Uvicorn's httptools protocol over a `_CoalescingTransport` (`uvicorn.Config(http=...)`)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_CoalescingTransport(transport))
