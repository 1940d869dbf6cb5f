"""The connections of ``llm4cov model serve``: one event loop, bounded connections,
total deadlines (issue 40; the HTTP side is :mod:`llm4cov.models.server`).

Connections are bounded (:class:`ConnectionLimits`). One event-loop thread accepts
every connection and reads every request head and body without blocking, each under a
total deadline: a connection that sends nothing (a fresh one, or a keep-alive one
between requests) is closed after ``idle_timeout_s``, a head must be complete within
``header_timeout_s`` of its first byte and a body within ``body_timeout_s`` of the end
of its head, so a client trickling a byte every few seconds is cut however it paces
them. Only complete requests reach the bounded pool of handler threads (their
concurrent generations meet in the policy's batcher and are decoded together); an
idle or slow client therefore never holds one, and the accept loop never waits for a
client. At most ``max_connections`` connections are open: a new one beyond the cap
closes the oldest connection that has no complete request (idle, still sending its
head, or its body), and is answered 503 only when every open connection is a request
being answered. Bodies being read or waiting for a handler hold at most
``buffer_bytes`` together (503 beyond). An answer must be taken within
``send_timeout_s``; after a closing answer the connection is drained for a moment
(lingering close) so that the client reads the answer rather than a reset.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import math
import queue
import re
import selectors
import socket
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 1024
"""Default cap on open client connections (``--max-connections``)."""
MAX_HEAD_BYTES = 64 * 1024
"""Largest request head (431 beyond)."""
LINGER_S = 2.0
"""Seconds a closing connection is drained after its answer (lingering close)."""
SPARE_CONNECTIONS = 32
"""Connections beyond the cap that may be open just to be answered 503."""


def fixed_answer(status: HTTPStatus, message: str) -> bytes:
    """A closing JSON error answer, as the event loop sends it without a handler."""
    body = json.dumps({"error": {"message": message, "type": status.phrase}}).encode()
    head = (f"HTTP/1.1 {status.value} {status.phrase}\r\nServer: llm4cov\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n")
    if status == HTTPStatus.SERVICE_UNAVAILABLE:
        head += "Retry-After: 1\r\n"
    return head.encode("ascii") + b"\r\n" + body


@dataclass(frozen=True)
class ConnectionLimits:
    """How many connections ``model serve`` holds and how long each may take (seconds;
    see the module docstring)."""

    max_connections: int = MAX_CONNECTIONS
    idle_timeout_s: float = 5.0
    """Seconds a connection may stay open without sending a byte of a request."""
    header_timeout_s: float = 10.0
    """Seconds from a request's first byte to the end of its head (request line, headers)."""
    body_timeout_s: float = 60.0
    """Seconds from the end of a request's head to the end of its body."""
    send_timeout_s: float = 60.0
    """Seconds a client may take to read its answer."""
    buffer_bytes: int = 256 * 1024**2
    """Cap on the request bodies held at once (read, or waiting for a handler)."""
    workers: int | None = None
    """Handler threads; None: twice the policy's ``batch_size`` (at least 4)."""

    def __post_init__(self) -> None:
        if self.max_connections < 1 or self.buffer_bytes < 1 or (
                self.workers is not None and self.workers < 1):
            raise ValueError("max_connections, buffer_bytes and workers must be >= 1")
        for name in ("idle_timeout_s", "header_timeout_s", "body_timeout_s",
                     "send_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds")


_OTHER_FILES = 128
"""Open files besides the connections: listening and wake-up sockets, the model's files."""


def fit_open_files(limits: ConnectionLimits) -> ConnectionLimits:
    """``limits`` with a ``max_connections`` this process can hold open: the soft limit
    on open files is raised (at most to the hard limit) to fit the cap, the spare
    connections and :data:`_OTHER_FILES`; where the hard limit is lower, the cap is."""
    try:
        import resource
    except ImportError:  # not POSIX
        return limits
    need = limits.max_connections + SPARE_CONNECTIONS + _OTHER_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= need:
        return limits
    fit = max(1, soft - SPARE_CONNECTIONS - _OTHER_FILES)
    return ConnectionLimits(**{**limits.__dict__, "max_connections": fit})


_IDLE, _HEAD, _BODY, _BUSY, _SEND, _LINGER = "idle", "head", "body", "busy", "send", "linger"
_HEAD_END = re.compile(rb"\n\r?\n")
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_CHUNK = 64 * 1024
_TICK_S = 0.1
_ACCEPTS_PER_TICK = 64
_OUT_OF_FILES = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


class _Conn:
    """One client connection; only the event loop thread reads or changes it."""

    __slots__ = ("buf", "close_after", "closed", "deadline", "events", "head", "need", "out",
                 "peer", "reserved", "scanned", "sock", "state")

    def __init__(self, sock: socket.socket, peer: Any) -> None:
        self.sock = sock
        self.peer = peer
        self.state = _IDLE
        self.buf = bytearray()
        self.scanned = 0  # bytes of buf already searched for the end of the head
        self.deadline: float | None = None
        self.head = b""
        self.need = 0
        self.close_after = False
        self.reserved = 0
        self.out = memoryview(b"")
        self.events = 0
        self.closed = False


Answer = Callable[[bytes, Any], tuple[bytes, bool]]
"""A handler: (complete request, client address) -> (answer bytes, end the connection)."""
Plan = Callable[[bytes], tuple[int, bool, bool]]
"""See :func:`plan_head`."""


class ModelServer:
    """The connections of ``model serve``: one event-loop thread (the caller of
    :meth:`serve_forever`) and ``workers`` handler threads; ``serve_forever``,
    ``shutdown``, ``server_close`` and ``server_address`` as in :mod:`socketserver`."""

    def __init__(self, answer: Answer, plan: Plan, address: tuple[str, int],
                 limits: ConnectionLimits, workers: int) -> None:
        self._answer = answer
        self._plan = plan
        self.limits = limits
        self.workers = workers
        host, port = address
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.create_server((host, port), family=family,
                                           backlog=min(limits.max_connections, 4096))
        self.socket.setblocking(False)
        self.server_address: tuple[str, int] = self.socket.getsockname()[:2]
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._conns: set[_Conn] = set()
        # connections without a complete request, oldest first: the ones a new
        # connection beyond the cap closes (waiting: idle, head, linger; then reading)
        self._waiting: OrderedDict[_Conn, None] = OrderedDict()
        self._reading: OrderedDict[_Conn, None] = OrderedDict()
        self._jobs: queue.SimpleQueue[tuple[_Conn, bytes] | None] = queue.SimpleQueue()
        self._done: deque[tuple[_Conn, bytes, bool]] = deque()
        self._reserved = 0
        self._paused_until: float | None = None  # accepting paused: out of files
        self._warned_at = -math.inf
        self._next_sweep = 0.0
        self._stop = threading.Event()
        self._stopped = threading.Event()

    @property
    def open_connections(self) -> int:
        """Client connections open now (read from the event loop thread, or roughly)."""
        return len(self._conns)

    @property
    def body_bytes_held(self) -> int:
        """Bytes of the body budget held now (bodies being read or waiting)."""
        return self._reserved

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept and answer requests until :meth:`shutdown` (``poll_interval`` is
        ignored: the loop wakes at once for shutdown)."""
        self._stopped.clear()
        threads = [threading.Thread(target=self._work, daemon=True,
                                    name=f"llm4cov-serve-{i}") for i in range(self.workers)]
        for thread in threads:
            thread.start()
        self._selector.register(self.socket, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        try:
            while not self._stop.is_set():
                for key, events in self._selector.select(_TICK_S):
                    if key.fileobj is self.socket:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        self._drain_wake()
                    else:
                        self._event(key.data, events)
                self._finish_jobs()
                self._sweep(time.monotonic())
        finally:
            for _ in threads:
                self._jobs.put(None)
            for conn in list(self._conns):
                self._close(conn)
            for sock in (self.socket, self._wake_r):
                with contextlib.suppress(KeyError, ValueError):
                    self._selector.unregister(sock)
            self._stop.clear()
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` (from another thread) and wait for it."""
        self._stop.set()
        self._wake()
        self._stopped.wait()

    def server_close(self) -> None:
        """Close the listening socket (after :meth:`serve_forever` returned)."""
        for conn in list(self._conns):
            self._close(conn)
        for sock in (self.socket, self._wake_r, self._wake_w):
            sock.close()
        self._selector.close()

    # -- handler threads ----------------------------------------------------------

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            conn, request = job
            try:
                answer, close = self._answer(request, conn.peer)
            except Exception:
                log.exception("model serve: a request failed")
                answer, close = fixed_answer(HTTPStatus.INTERNAL_SERVER_ERROR,
                                             "the request failed (see the server's log)"), True
            self._done.append((conn, answer, close))
            self._wake()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full (the loop wakes anyway) or closed
            self._wake_w.send(b"\0")

    def _drain_wake(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass

    # -- the event loop -------------------------------------------------------------

    def _accept(self) -> None:
        now = time.monotonic()
        for _ in range(_ACCEPTS_PER_TICK):
            try:
                sock, peer = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in _OUT_OF_FILES:
                    self._out_of_files(now)
                    return
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue
                log.warning("model serve: accept failed: %s", exc)
                return
            sock.setblocking(False)
            limit = self.limits.max_connections
            if len(self._conns) >= limit and not self._evict():
                if len(self._conns) >= limit + SPARE_CONNECTIONS:
                    sock.close()
                    continue
                self._reply(self._open(sock, peer, now), HTTPStatus.SERVICE_UNAVAILABLE,
                            "every connection is busy; retry later")
                continue
            self._open(sock, peer, now)

    def _out_of_files(self, now: float) -> None:
        if now - self._warned_at > 60:
            self._warned_at = now
            log.warning("model serve: out of open files at %d connections (raise "
                        "`ulimit -n` or lower --max-connections)", len(self._conns))
        if not self._evict():  # nothing to close: stop accepting for a moment
            self._selector.unregister(self.socket)
            self._paused_until = now + _TICK_S

    def _open(self, sock: socket.socket, peer: Any, now: float) -> _Conn:
        conn = _Conn(sock, peer)
        self._conns.add(conn)
        self._wait(conn, _IDLE, now + self.limits.idle_timeout_s)
        self._watch(conn, selectors.EVENT_READ)
        return conn

    def _evict(self) -> bool:
        """Close the oldest connection without a complete request (False: none)."""
        for pool in (self._waiting, self._reading):
            if pool:
                self._close(next(iter(pool)))
                return True
        return False

    def _event(self, conn: _Conn, events: int) -> None:
        try:
            if conn.state == _SEND:
                self._send(conn)
            else:
                self._receive(conn)
        except Exception:
            log.exception("model serve: a connection failed")
            self._close(conn)

    def _receive(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return self._close(conn)
        if not data:
            return self._close(conn)
        if conn.state != _LINGER:
            conn.buf += data
            self._advance(conn, time.monotonic())

    def _advance(self, conn: _Conn, now: float) -> None:
        """Move a connection on after bytes of a request arrived."""
        buf = conn.buf
        if conn.state == _IDLE:
            del buf[:len(buf) - len(buf.lstrip(b"\r\n"))]  # blank lines before a request
            if not buf:
                return
            conn.state, conn.deadline = _HEAD, now + self.limits.header_timeout_s
        if conn.state == _HEAD:
            match = _HEAD_END.search(buf, max(0, conn.scanned - 2))
            conn.scanned = len(buf)
            if match is None or match.end() > MAX_HEAD_BYTES:
                if match is not None or len(buf) > MAX_HEAD_BYTES:
                    self._reply(conn, HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
                                f"the request head exceeds {MAX_HEAD_BYTES} bytes")
                return
            conn.head = bytes(buf[:match.end()])
            del buf[:match.end()]
            conn.scanned = 0
            conn.need, expect, conn.close_after = self._plan(conn.head)
            if conn.need:
                if not self._reserve(conn, conn.need):
                    return self._reply(conn, HTTPStatus.SERVICE_UNAVAILABLE,
                                       "too many request bodies at once; retry later")
                conn.state, conn.deadline = _BODY, now + self.limits.body_timeout_s
                self._waiting.pop(conn, None)
                self._reading[conn] = None
                if expect and len(buf) < conn.need:
                    with contextlib.suppress(OSError):  # 25 bytes on a quiet connection
                        conn.sock.send(_CONTINUE)
        if len(buf) < conn.need:
            return
        request = conn.head + bytes(buf[:conn.need])
        del buf[:conn.need]
        conn.state, conn.deadline = _BUSY, None
        self._waiting.pop(conn, None)
        self._reading.pop(conn, None)
        self._watch(conn, 0)
        self._jobs.put((conn, request))

    def _reserve(self, conn: _Conn, size: int) -> bool:
        """Hold ``size`` bytes of the body budget for ``conn``, closing the oldest
        connections still reading a body when it is spent (False: not enough)."""
        while self._reserved + size > self.limits.buffer_bytes:
            victim = next((c for c in self._reading if c is not conn), None)
            if victim is None:
                return False
            self._close(victim)
        conn.reserved = size
        self._reserved += size
        return True

    def _release(self, conn: _Conn) -> None:
        self._reserved -= conn.reserved
        conn.reserved = 0

    def _finish_jobs(self) -> None:
        while self._done:
            conn, answer, close = self._done.popleft()
            if conn.closed:
                continue
            self._release(conn)
            conn.close_after = conn.close_after or close
            try:
                self._respond(conn, answer)
            except Exception:
                log.exception("model serve: a connection failed")
                self._close(conn)

    def _reply(self, conn: _Conn, status: HTTPStatus, message: str) -> None:
        """Answer ``conn`` from the event loop and end it."""
        conn.close_after = True
        self._release(conn)
        self._respond(conn, fixed_answer(status, message))

    def _respond(self, conn: _Conn, answer: bytes) -> None:
        conn.state, conn.deadline = _SEND, time.monotonic() + self.limits.send_timeout_s
        conn.out = memoryview(answer)
        self._waiting.pop(conn, None)
        self._reading.pop(conn, None)
        self._send(conn)

    def _send(self, conn: _Conn) -> None:
        try:
            sent = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            return self._close(conn)
        conn.out = conn.out[sent:]
        if conn.out:
            return self._watch(conn, selectors.EVENT_WRITE)
        now = time.monotonic()
        if conn.close_after:
            try:
                conn.sock.shutdown(socket.SHUT_WR)
            except OSError:
                return self._close(conn)
            conn.buf.clear()
            self._wait(conn, _LINGER, now + LINGER_S)
        else:
            self._wait(conn, _IDLE, now + self.limits.idle_timeout_s)
        self._watch(conn, selectors.EVENT_READ)
        if conn.state == _IDLE and conn.buf:  # a pipelined request
            self._advance(conn, now)

    def _wait(self, conn: _Conn, state: str, deadline: float) -> None:
        conn.state, conn.deadline = state, deadline
        conn.head, conn.need, conn.scanned = b"", 0, 0
        self._reading.pop(conn, None)
        self._waiting[conn] = None
        self._waiting.move_to_end(conn)

    def _watch(self, conn: _Conn, events: int) -> None:
        if events == conn.events:
            return
        if not conn.events:
            self._selector.register(conn.sock, events, conn)
        elif not events:
            self._selector.unregister(conn.sock)
        else:
            self._selector.modify(conn.sock, events, conn)
        conn.events = events

    def _close(self, conn: _Conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        self._conns.discard(conn)
        self._waiting.pop(conn, None)
        self._reading.pop(conn, None)
        self._release(conn)
        if conn.events:
            with contextlib.suppress(KeyError, ValueError, RuntimeError):
                self._selector.unregister(conn.sock)
            conn.events = 0
        conn.sock.close()
        conn.buf, conn.out = bytearray(), memoryview(b"")

    def _sweep(self, now: float) -> None:
        """Close the connections past their deadline; resume a paused accept."""
        if now < self._next_sweep:
            return
        self._next_sweep = now + _TICK_S
        for conn in [c for c in self._conns if c.deadline is not None and c.deadline <= now]:
            self._close(conn)
        if self._paused_until is not None and now >= self._paused_until:
            self._paused_until = None
            self._selector.register(self.socket, selectors.EVENT_READ)
