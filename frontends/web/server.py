"""The web view's server: the page over HTTP and a WebSocket, on one port.

:class:`WebServer` listens on HOST:PORT (127.0.0.1 unless told otherwise; 0
= any free port).  It serves the page's static files (``frontends/web/static``,
shipped as package data) and ``/screen.png`` (the last frame) over plain
HTTP, and the WebSocket ``/ws`` with the ``websockets`` library.  It runs its
asyncio loop in a thread of its own and never touches the machine: the
emulator's loop (:mod:`frontends.web.view`) hands it what to send
(:meth:`frame`, :meth:`send`) and takes what the browsers sent from
:attr:`inbox` between slices, so every input lands at a slice boundary.

Several tabs may watch at once.  Each client has its own sender: text
messages (status, console output, log lines) are sent in order, up to
``MAX_BACKLOG`` of them (a client that falls further behind loses the
oldest, and is told so once); of the frames only the newest is kept, so a
slow client skips frames instead of delaying the others or the emulator.  A
client that connects gets the board's description (``hello``), the recent
console output and log, the last status and the last frame.

WebSocket connections must come from the page itself: a browser sends an
``Origin`` header, and its host must be the ``Host`` the request was sent to
(a page on another site cannot drive the watch); clients that send no
``Origin`` (scripts, tests) are accepted.  Messages from clients are JSON
objects of at most ``MAX_MESSAGE`` bytes; anything else closes that client.

Not modelled / limits: no TLS and no authentication (it listens on the
loopback interface by default: reach it from elsewhere through an SSH
tunnel); HTTP is answered one request per connection (``Connection: close``).
"""
from __future__ import annotations

import asyncio
import collections
import json
import logging
import socket
import threading
import time
from importlib import resources
from typing import Optional
from urllib.parse import urlsplit

log = logging.getLogger("frontends.web")

MAX_MESSAGE = 64 * 1024          # bytes in one message from a browser
MAX_BACKLOG = 2000               # text messages queued for one client
HISTORY = 400                    # console and log messages replayed to a new client
STATIC = {                       # path -> (file in static/, content type)
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/style.css": ("style.css", "text/css; charset=utf-8"),
}


def static_file(name: str) -> bytes:
    """A file of the page (package data: it ships in a non-editable install)."""
    return resources.files("frontends.web").joinpath("static", name).read_bytes()


def origin_allowed(origin: Optional[str], host: Optional[str]) -> bool:
    """A WebSocket from a browser must come from the page this server gave it:
    the Origin's host[:port] equals the Host header.  No Origin: not a
    browser (a script), allowed."""
    if origin is None:
        return True
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(host) and parts.netloc.lower() == \
        str(host).strip().lower()


class _Client:
    def __init__(self, cid: int, ws):
        self.id = cid
        self.ws = ws
        self.texts: collections.deque = collections.deque()
        self.frame: Optional[bytes] = None
        self.dropped = 0
        self.wake = asyncio.Event()

    def queue(self, text: str) -> None:
        if len(self.texts) >= MAX_BACKLOG:
            self.texts.popleft()
            self.dropped += 1
        self.texts.append(text)
        self.wake.set()


class WebServer:
    """The page and its WebSocket on host:port.  ``OSError`` from the
    constructor when the port cannot be had (in use, not allowed): the
    caller reports it before anything runs."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, hello: Optional[dict] = None):
        self.sock = socket.create_server((host, port))     # raises here, in the caller's thread
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.hello = dict(hello or {"t": "hello"})
        # (client id, message, host time received) from the browsers; None
        # message = that client left.  Drained by the emulator loop.
        self.inbox: collections.deque = collections.deque()
        self.clients: dict = {}
        self.frames_sent = 0              # frames handed to the server (the sequence number)
        self._frame: Optional[bytes] = None       # the last PNG
        self._status: Optional[str] = None
        self._history: collections.deque = collections.deque(maxlen=HISTORY)
        self._lock = threading.Lock()     # _frame, _status, _history, clients (read from both)
        self._next_id = 1
        self._ready = threading.Event()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop: Optional[asyncio.Event] = None
        self._error: Optional[BaseException] = None
        self.thread = threading.Thread(target=self._thread, name="web-server", daemon=True)
        self.thread.start()
        self._ready.wait(10)
        if self._error is not None:
            self.sock.close()
            raise OSError(f"the web server did not start: {self._error}")

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/"

    # ------------------------------------------------------------------
    # called from the emulator's thread
    # ------------------------------------------------------------------
    def frame(self, png: bytes) -> int:
        """The screen changed: ``png`` goes to every client (the newest only
        to one that is still sending an older one) as one binary message:
        the frame's sequence number (4 bytes, big-endian) then the PNG.
        Returns the sequence number."""
        with self._lock:
            self._frame = png
            self.frames_sent += 1
            seq = self.frames_sent
        self._call(self._fan_frame, seq.to_bytes(4, "big") + png)
        return seq

    def send(self, msg: dict, keep: bool = False) -> None:
        """A JSON message to every client; ``keep``: replay it to clients
        that connect later (console output and log lines).  A status
        message is kept as the latest status."""
        text = json.dumps(msg, separators=(",", ":"))
        with self._lock:
            if keep:
                self._history.append(text)
            if msg.get("t") == "status":
                self._status = text
        self._call(self._fan_text, text)

    def set_hello(self, hello: dict) -> None:
        with self._lock:
            self.hello = dict(hello)

    def client_count(self) -> int:
        with self._lock:
            return len(self.clients)

    def last_frame(self) -> Optional[bytes]:
        with self._lock:
            return self._frame

    def close(self) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed() and self._stop is not None:
            try:
                loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:
                pass
            self.thread.join(5)
        try:
            self.sock.close()
        except OSError:
            pass

    def _call(self, fn, *args) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:              # closing
            pass

    # ------------------------------------------------------------------
    # the server's thread
    # ------------------------------------------------------------------
    def _thread(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main())
        except BaseException as e:        # noqa: BLE001 - reported to the constructor
            self._error = e
            self._ready.set()
        finally:
            loop.close()

    async def _main(self) -> None:
        from websockets.asyncio.server import serve
        self._stop = asyncio.Event()
        server = await serve(self._handler, sock=self.sock, process_request=self._http,
                             max_size=MAX_MESSAGE, compression=None, server_header=None,
                             close_timeout=1,
                             logger=logging.getLogger("frontends.web.websockets"))
        self._ready.set()
        await self._stop.wait()
        server.close()                    # every tab is told "going away"
        try:                              # a client that does not answer is not waited for
            await asyncio.wait_for(server.wait_closed(), 2)
        except asyncio.TimeoutError:
            log.info("web: a client did not close in time")

    def _http(self, connection, request):
        """Plain HTTP for everything but /ws (the page, its script, the frame)."""
        path = urlsplit(request.path).path
        if path == "/ws":
            if not origin_allowed(request.headers.get("Origin"), request.headers.get("Host")):
                log.warning("web: WebSocket from origin %r refused (not this page)",
                            request.headers.get("Origin"))
                return connection.respond(403, "WebSocket connections come from this page\n")
            return None                                     # the WebSocket handshake
        if path == "/screen.png":
            body = self.last_frame()
            if body is None:
                return connection.respond(503, "no frame yet\n")
            return self._response(connection, body, "image/png")
        if path in STATIC:
            name, ctype = STATIC[path]
            return self._response(connection, static_file(name), ctype)
        if path == "/favicon.ico":
            r = connection.respond(204, "")
            return r
        return connection.respond(404, "not found\n")

    @staticmethod
    def _response(connection, body: bytes, ctype: str):
        r = connection.respond(200, "")
        r.body = body
        del r.headers["Content-Length"]
        del r.headers["Content-Type"]
        r.headers["Content-Length"] = str(len(body))
        r.headers["Content-Type"] = ctype
        r.headers["Cache-Control"] = "no-store"
        r.headers["X-Content-Type-Options"] = "nosniff"
        return r

    async def _handler(self, ws) -> None:
        with self._lock:
            cid = self._next_id
            self._next_id += 1
            client = _Client(cid, ws)
            self.clients[cid] = client
            hello = dict(self.hello, client=cid)
            history = list(self._history)
            status, frame = self._status, self._frame
            if frame is not None:
                frame = self.frames_sent.to_bytes(4, "big") + frame
        client.queue(json.dumps(hello, separators=(",", ":")))
        for text in history:
            client.queue(text)
        if status is not None:
            client.queue(status)
        if frame is not None:
            client.frame = frame
            client.wake.set()
        self.inbox.append((cid, {"t": "join"}, time.monotonic()))
        sender = asyncio.ensure_future(self._sender(client))
        try:
            async for message in ws:
                if isinstance(message, bytes):
                    raise ValueError("binary message")
                msg = json.loads(message)
                if not isinstance(msg, dict) or not isinstance(msg.get("t"), str):
                    raise ValueError("not a JSON object with a 't'")
                self.inbox.append((cid, msg, time.monotonic()))
        except (ValueError, RecursionError) as e:
            log.warning("web: client %d sent something that is not a message (%s); closing it",
                        cid, str(e)[:80])
            await ws.close(1003, "not a message")
        except Exception as e:            # noqa: BLE001 - a client's failure is the client's
            log.info("web: client %d: %s", cid, e)
        finally:
            sender.cancel()
            with self._lock:
                self.clients.pop(cid, None)
            self.inbox.append((cid, None, time.monotonic()))

    async def _sender(self, client: _Client) -> None:
        try:
            while True:
                await client.wake.wait()
                client.wake.clear()
                if client.dropped:
                    n, client.dropped = client.dropped, 0
                    await client.ws.send(json.dumps({"t": "log", "text":
                                                     f"(this tab fell behind: {n} messages "
                                                     f"dropped)"}))
                while client.texts:
                    await client.ws.send(client.texts.popleft())
                if client.frame is not None:
                    frame, client.frame = client.frame, None
                    await client.ws.send(frame)
        except Exception:                 # noqa: BLE001 - the connection closed
            pass

    def _fan_text(self, text: str) -> None:
        for c in list(self.clients.values()):
            c.queue(text)

    def _fan_frame(self, png: bytes) -> None:
        for c in list(self.clients.values()):
            c.frame = png
            c.wake.set()
