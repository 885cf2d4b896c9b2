"""A local HTTP server that answers like the Gemini API (``generateContent``), for tests and
the LLM benchmark: no network, the real google-genai client pointed at it with ``base_url``.

Replies come, in this order, from a route whose text appears in the request's path, system
instruction or prompt (``stub.on("You extract fields").reply(...)``: per-path, per-operation or
per-question scripts, which concurrent requests cannot take from each other), from
the global script (``stub.reply``, ``stub.fail``, ...), or from a ``responder`` that computes one
(the benchmark). Each reply may be delayed (a slow or hung model), carry HTTP headers
(Retry-After) and google.rpc.RetryInfo details, thinking-token counts, a safety block or no
candidate at all.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering


Responder = Callable[[str, dict[str, Any]], Reply]


def usage(tokens_in: int, tokens_out: int, thoughts: int = 0) -> dict[str, int]:
    return {
        "promptTokenCount": tokens_in,
        "candidatesTokenCount": tokens_out,
        "thoughtsTokenCount": thoughts,
        "totalTokenCount": tokens_in + tokens_out + thoughts,
    }


def candidate(
    text: str, *, tokens_in: int = 120, tokens_out: int = 80, thoughts: int = 0
) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": text}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": usage(tokens_in, tokens_out, thoughts),
    }


STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def error(
    status: int, message: str = "stub error", *, retry_delay: float | None = None
) -> tuple[int, dict[str, Any]]:
    body: dict[str, Any] = {
        "error": {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}
    }
    if retry_delay is not None:
        body["error"]["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_delay:g}s"}
        ]
    return status, body


def error_reply(
    status: int,
    message: str = "stub error",
    *,
    retry_after: float | None = None,
    retry_delay: float | None = None,
) -> Reply:
    code, body = error(status, message, retry_delay=retry_delay)
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return Reply(code, body, headers)


def prompt_blocked(reason: str = "SAFETY") -> dict[str, Any]:
    return {"promptFeedback": {"blockReason": reason}, "usageMetadata": usage(120, 0)}


def answer_blocked(reason: str = "SAFETY") -> dict[str, Any]:
    return {
        "candidates": [
            {
                "finishReason": reason,
                "index": 0,
                "safetyRatings": [
                    {
                        "category": "HARM_CATEGORY_DANGEROUS_CONTENT",
                        "probability": "HIGH",
                        "blocked": True,
                    }
                ],
            }
        ],
        "usageMetadata": usage(120, 0),
    }


def no_candidates() -> dict[str, Any]:
    return {"candidates": [], "usageMetadata": usage(120, 0)}


class Script:
    """Replies queued for the requests a route (or the whole stub) answers."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()

    def reply(
        self,
        text: str,
        *,
        tokens_in: int = 120,
        tokens_out: int = 80,
        thoughts: int = 0,
        delay: float = 0.0,
    ) -> Script:
        body = candidate(text, tokens_in=tokens_in, tokens_out=tokens_out, thoughts=thoughts)
        self.replies.append(Reply(200, body, delay=delay))
        return self

    def fail(
        self,
        status: int,
        times: int = 1,
        *,
        retry_after: float | None = None,
        retry_delay: float | None = None,
        message: str = "stub error",
    ) -> Script:
        for _ in range(times):
            self.replies.append(
                error_reply(status, message, retry_after=retry_after, retry_delay=retry_delay)
            )
        return self

    def block(self, reason: str = "SAFETY", *, where: str = "answer") -> Script:
        body = prompt_blocked(reason) if where == "prompt" else answer_blocked(reason)
        self.replies.append(Reply(200, body))
        return self

    def empty(self) -> Script:
        self.replies.append(Reply(200, no_candidates()))
        return self

    def truncated(self, text: str = '{"dominant_type_overall": "path') -> Script:
        """An answer cut off at the output limit: finish reason MAX_TOKENS, partial JSON."""
        body = candidate(text, tokens_out=0)
        body["candidates"][0]["finishReason"] = "MAX_TOKENS"
        self.replies.append(Reply(200, body))
        return self

    def hang(self, seconds: float, then: str = "{}") -> Script:
        """A reply that comes only after ``seconds`` (longer than the client's timeout: a hang)."""
        self.replies.append(Reply(200, candidate(then), delay=seconds))
        return self


class GeminiStub(Script):
    def __init__(
        self, *, responder: Responder | None = None, latency: float = 0.0, port: int = 0
    ) -> None:
        super().__init__()
        self.responder = responder
        self.latency = latency
        self.routes: list[tuple[str, Script]] = []
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.times: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests being answered at once
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with stub._lock:
                    stub.requests.append(body)
                    stub.paths.append(self.path)
                    stub.times.append(time.time())
                    stub.in_flight += 1
                    stub.max_in_flight = max(stub.max_in_flight, stub.in_flight)
                try:
                    reply = stub.next_reply(self.path, body)
                    pause = reply.delay + stub.latency
                    if pause:
                        time.sleep(pause)
                finally:
                    with stub._lock:
                        stub.in_flight -= 1
                payload = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout): as a hung server would see it

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def on(self, match: str) -> Script:
        """A script for the requests whose path, system instruction or prompt contains
        ``match``."""
        script = Script()
        self.routes.append((match, script))
        return script

    def next_reply(self, path: str, body: dict[str, Any]) -> Reply:
        system, prompt = system_text(body), prompt_text(body)
        with self._lock:
            for match, script in self.routes:
                if (match in path or match in system or match in prompt) and script.replies:
                    return script.replies.popleft()
            if self.replies:
                return self.replies.popleft()
        if self.responder is not None:
            return self.responder(path, body)
        return error_reply(500, "no script")

    def prompt(self, index: int) -> str:
        return prompt_text(self.requests[index])

    def system(self, index: int) -> str:
        return system_text(self.requests[index])

    def __enter__(self) -> GeminiStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


def prompt_text(body: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in body["contents"][0]["parts"])


def system_text(body: dict[str, Any]) -> str:
    instruction = body.get("systemInstruction") or {}
    return "".join(p.get("text", "") for p in instruction.get("parts", []))


_PAGE = re.compile(r"<<<PAGE (\d+) (\w+)>>>\n(.*?)\n<<<END PAGE \1 \2>>>", re.DOTALL)


def prompt_pages(prompt: str) -> list[str]:
    """The page texts of a delimited prompt, in order."""
    return [m.group(3) for m in _PAGE.finditer(prompt)]
