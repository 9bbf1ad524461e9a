"""`PlainHttpTransport`: an httpx transport that sends each request on a connection of its
own, over the standard library's `http.client`, for plain `http://` only.

httpx's own transport is httpcore (with h11): a connection pool and HTTP/1.1 and HTTP/2 state
machines whose import is the largest single cost of a `shoal jobs` after the libraries the
command line is made of (~8 % of its instructions). A command that makes one to three
requests to a local server and exits has no use for a pool, and `http.client` is already
loaded (httpx imports it). The client keeps httpx's interface, its errors included: a
failure here is raised as the httpx exception httpcore would have raised (`ConnectError`,
`ConnectTimeout`, `ReadTimeout` …), so `ShoalClient` reports it the same way.

TLS stays with httpx's own transport (its certificate store and settings): `for_url`
returns None for anything but `http://`.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import httpx

#: Bytes asked for per read of a streamed body (`shoal logs -f` gets what has arrived).
CHUNK = 64 * 1024


def for_url(base_url: str) -> PlainHttpTransport | None:
    """The transport for a client of `base_url`: this one for plain HTTP, else None
    (httpx's own)."""
    return PlainHttpTransport() if base_url.startswith("http://") else None


class PlainHttpTransport(httpx.BaseTransport):
    """One `http.client` connection per request, closed when its response is."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        url = request.url
        if url.scheme != "http":
            raise httpx.UnsupportedProtocol(f"{url.scheme}:// is not plain HTTP",
                                            request=request)
        connection = http.client.HTTPConnection(url.host, url.port,
                                                timeout=timeouts.get("connect"))
        try:
            _connect(connection, request)
            _send(connection, request, timeouts.get("write"))
            response = _answer(connection, request, timeouts.get("read"))
        except BaseException:
            connection.close()
            raise
        return httpx.Response(
            response.status, headers=response.getheaders(),
            stream=_Body(response, connection, request),
            extensions={"http_version": b"HTTP/1.1",
                        "reason_phrase": response.reason.encode("latin-1")})


def _connect(connection: http.client.HTTPConnection, request: httpx.Request) -> None:
    try:
        connection.connect()
    except TimeoutError as exc:
        raise httpx.ConnectTimeout(str(exc) or "timed out", request=request) from exc
    except OSError as exc:
        raise httpx.ConnectError(str(exc), request=request) from exc


def _send(connection: http.client.HTTPConnection, request: httpx.Request,
          timeout: float | None) -> None:
    assert connection.sock is not None  # connected
    connection.sock.settimeout(timeout)
    try:
        # httpx has set every header, Host and Accept-Encoding included
        connection.putrequest(request.method, request.url.raw_path.decode("ascii"),
                              skip_host=True, skip_accept_encoding=True)
        for name, value in request.headers.raw:
            connection.putheader(name.decode("latin-1"), value)
        connection.endheaders(request.read() or None)
    except TimeoutError as exc:
        raise httpx.WriteTimeout(str(exc) or "timed out", request=request) from exc
    except OSError as exc:
        raise httpx.WriteError(str(exc), request=request) from exc


def _answer(connection: http.client.HTTPConnection, request: httpx.Request,
            timeout: float | None) -> http.client.HTTPResponse:
    assert connection.sock is not None
    connection.sock.settimeout(timeout)
    try:
        return connection.getresponse()
    except TimeoutError as exc:
        raise httpx.ReadTimeout(str(exc) or "timed out", request=request) from exc
    except http.client.HTTPException as exc:
        raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__,
                                        request=request) from exc
    except OSError as exc:
        raise httpx.ReadError(str(exc), request=request) from exc


class _Body(httpx.SyncByteStream):
    """A response's body as it arrives (chunked or not: `http.client` decodes the framing;
    httpx decodes any content encoding)."""

    def __init__(self, response: http.client.HTTPResponse,
                 connection: http.client.HTTPConnection, request: httpx.Request) -> None:
        self._response = response
        self._connection = connection
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = self._response.read1(CHUNK)
            except TimeoutError as exc:
                raise httpx.ReadTimeout(str(exc) or "timed out",
                                        request=self._request) from exc
            except http.client.HTTPException as exc:
                raise httpx.RemoteProtocolError(str(exc) or type(exc).__name__,
                                                request=self._request) from exc
            except OSError as exc:
                raise httpx.ReadError(str(exc), request=self._request) from exc
            if not chunk:
                return
            yield chunk

    def close(self) -> None:
        self._response.close()
        self._connection.close()
