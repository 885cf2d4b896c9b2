"""A local HTTP server that answers like the Gemini API, from a script of responses."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def candidate(text: str, *, tokens_in: int = 120, tokens_out: int = 80) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": tokens_in,
            "candidatesTokenCount": tokens_out,
            "totalTokenCount": tokens_in + tokens_out,
        },
    }


def error(status: int, message: str = "stub error") -> tuple[int, dict[str, Any]]:
    names = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
    return status, {
        "error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}
    }


class GeminiStub:
    def __init__(self) -> None:
        self.script: deque[tuple[int, dict[str, Any]]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        # Answer from the request itself (concurrent calls arrive in any order): a function of
        # the request's JSON returning (status, body); the script is used when it is None.
        self.responder: Callable[[dict[str, Any]], tuple[int, dict[str, Any]]] | None = None
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                with stub._lock:
                    stub.requests.append(request)
                    stub.paths.append(self.path)
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                try:
                    if stub.responder is not None:
                        status, body = stub.responder(request)
                    else:
                        with stub._lock:
                            status, body = (
                                stub.script.popleft() if stub.script else error(500, "no script")
                            )
                finally:
                    with stub._lock:
                        stub.in_flight -= 1
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def reply(self, text: str) -> None:
        self.script.append((200, candidate(text)))

    def fail(self, status: int, times: int = 1) -> None:
        for _ in range(times):
            self.script.append(error(status))

    def prompt(self, index: int) -> str:
        return self.requests[index]["contents"][0]["parts"][0]["text"]

    def __enter__(self) -> GeminiStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
