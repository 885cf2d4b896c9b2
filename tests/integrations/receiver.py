"""A local HTTP server that receives webhooks: it records every request and answers from a
script of status codes (then 200), or 503 while ``down`` is set."""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# For worker processes (their environment): deliveries to the receivers' 127.0.0.1 allowed.
ALLOW_LOOPBACK = {"WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8"}


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    status: int = 200


class Receiver:
    """``host``/``port``: where it listens (127.0.0.1, any free port); ``tls``: a server-side
    SSLContext to answer https (the names clients asked for by SNI are kept in ``sni``)."""

    def __init__(
        self, *statuses: int, host: str = "127.0.0.1", port: int = 0, tls: Any = None
    ) -> None:
        self.script: deque[int] = deque(statuses)
        self.received: list[Received] = []
        self.sni: list[str | None] = []
        self.down = False  # answer 503 to everything (a receiver down for maintenance)
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                with receiver.lock:
                    if receiver.down:
                        status = 503
                    else:
                        status = receiver.script.popleft() if receiver.script else 200
                    receiver.received.append(Received(self.path, dict(self.headers), body, status))
                answer = b"ok" if status < 300 else b"receiver is down for maintenance"
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.port = self.server.server_address[1]
        if tls is not None:
            tls.sni_callback = lambda sock, name, context: self.sni.append(name)
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://{host}:{self.port}/hooks/vetted"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
