"""A listening socket on 127.0.0.1 whose clients a test's function serves,
one after another, on a thread: a stand-in for a --bridge."""
from __future__ import annotations

import socket
import threading
from typing import Callable


def serve_clients(handle: Callable) -> tuple:
    """``handle(connection, stop)`` for each client (the connection is closed
    after it; OSError from it ends that client only).  Returns (port, stop):
    ``stop.set()`` ends the server within 0.2 s."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(4)
    ls.settimeout(0.2)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                c, _ = ls.accept()
            except OSError:
                continue
            with c:
                try:
                    handle(c, stop)
                except OSError:
                    pass
        ls.close()
    threading.Thread(target=serve, daemon=True).start()
    return ls.getsockname()[1], stop
