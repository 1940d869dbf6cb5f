"""Bounds on what a model server sends back: the ``openai`` client reads a response
whole, and httpx's timeouts are per read, so a hostile or broken server could send an
answer of any size (64 MiB was read in 1.2 s) or trickle one byte every half second
for ever. :func:`bounded_clients` gives the client httpx clients whose transport cuts a
response off past :data:`MAX_RESPONSE_BYTES` or past its deadline (``timeout_s`` from
the request's start, the whole body included)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator

import httpx2 as httpx  # the openai client's HTTP library (a fork of httpx)

MAX_RESPONSE_BYTES = 8 << 20
"""Bytes of one response body at most (a chat answer of ``max_tokens`` 32k is ~128 KiB)."""


class ResponseTooLarge(httpx.ReadError):
    """The body passed :data:`MAX_RESPONSE_BYTES`."""


def _check(read: int, limit: int, deadline: float, clock: Callable[[], float]) -> None:
    if read > limit:
        raise ResponseTooLarge(f"the response passed {limit} bytes")
    if clock() > deadline:
        raise httpx.ReadTimeout("the response took longer than its deadline")


class _Stream(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, limit: int, deadline: float,
                 clock: Callable[[], float]) -> None:
        self.inner, self.limit, self.deadline, self.clock = inner, limit, deadline, clock

    def __iter__(self) -> Iterator[bytes]:
        read = 0
        for chunk in self.inner:
            read += len(chunk)
            _check(read, self.limit, self.deadline, self.clock)
            yield chunk

    def close(self) -> None:
        self.inner.close()


class _AsyncStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int, deadline: float,
                 clock: Callable[[], float]) -> None:
        self.inner, self.limit, self.deadline, self.clock = inner, limit, deadline, clock

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self.inner:
            read += len(chunk)
            _check(read, self.limit, self.deadline, self.clock)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class BoundedTransport(httpx.HTTPTransport):
    """An HTTP transport whose responses are bounded (see the module docstring)."""

    def __init__(self, timeout_s: float, limit: int = MAX_RESPONSE_BYTES,
                 clock: Callable[[], float] = time.monotonic, **kwargs) -> None:
        super().__init__(**kwargs)
        self.timeout_s, self.limit, self.clock = timeout_s, limit, clock

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        deadline = self.clock() + self.timeout_s
        response = super().handle_request(request)
        assert isinstance(response.stream, httpx.SyncByteStream)
        response.stream = _Stream(response.stream, self.limit, deadline, self.clock)
        return response


class AsyncBoundedTransport(httpx.AsyncHTTPTransport):
    """The asynchronous :class:`BoundedTransport`."""

    def __init__(self, timeout_s: float, limit: int = MAX_RESPONSE_BYTES,
                 clock: Callable[[], float] = time.monotonic, **kwargs) -> None:
        super().__init__(**kwargs)
        self.timeout_s, self.limit, self.clock = timeout_s, limit, clock

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        deadline = self.clock() + self.timeout_s
        response = await super().handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _AsyncStream(response.stream, self.limit, deadline, self.clock)
        return response


def bounded_clients(timeout_s: float) -> tuple[httpx.Client, httpx.AsyncClient]:
    """The ``openai`` client's default httpx clients on bounded transports."""
    import openai

    return (openai.DefaultHttpxClient(transport=BoundedTransport(timeout_s)),
            openai.DefaultAsyncHttpxClient(transport=AsyncBoundedTransport(timeout_s)))
