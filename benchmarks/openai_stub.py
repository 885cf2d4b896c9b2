"""A local HTTP server that answers like an OpenAI-compatible Chat Completions API (``POST
/v1/chat/completions``, as vLLM, Ollama, llama.cpp's server and Azure OpenAI do), for tests: no
network, the real ``openai`` client pointed at it with ``base_url=stub.url + "/v1"``.

The same server and scripting as the Gemini stub (benchmarks.gemini_stub: routes by text in the
path, system message or prompt, a global script, a responder, delays, headers), with OpenAI's
bodies: an answer with its usage (reasoning tokens included), finish reason ``length`` or
``content_filter``, a refusal, no choices, empty content, and OpenAI's error objects with
Retry-After.
"""

from __future__ import annotations

from typing import Any

from benchmarks.gemini_stub import GeminiStub, Reply, Script

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}


def usage(tokens_in: int, tokens_out: int, reasoning: int = 0) -> dict[str, Any]:
    """OpenAI's usage: completion_tokens include the reasoning tokens."""
    return {
        "prompt_tokens": tokens_in,
        "completion_tokens": tokens_out + reasoning,
        "total_tokens": tokens_in + tokens_out + reasoning,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def completion(
    content: str | None,
    *,
    finish_reason: str = "stop",
    refusal: str | None = None,
    tokens_in: int = 120,
    tokens_out: int = 80,
    reasoning: int = 0,
    model: str = "stub-model",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage(tokens_in, tokens_out, reasoning),
    }


def error_reply(
    status: int, message: str = "stub error", *, retry_after: float | None = None
) -> Reply:
    body = {
        "error": {
            "message": message,
            "type": ERROR_TYPES.get(status, "error"),
            "code": ERROR_TYPES.get(status),
            "param": None,
        }
    }
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    return Reply(status, body, headers)


class OpenAIScript(Script):
    """Replies queued for the requests a route (or the whole stub) answers."""

    def reply(  # type: ignore[override]
        self,
        text: str,
        *,
        tokens_in: int = 120,
        tokens_out: int = 80,
        reasoning: int = 0,
        delay: float = 0.0,
    ) -> OpenAIScript:
        body = completion(text, tokens_in=tokens_in, tokens_out=tokens_out, reasoning=reasoning)
        self.replies.append(Reply(200, body, delay=delay))
        return self

    def fail(  # type: ignore[override]
        self,
        status: int,
        times: int = 1,
        *,
        retry_after: float | None = None,
        message: str = "stub error",
    ) -> OpenAIScript:
        for _ in range(times):
            self.replies.append(error_reply(status, message, retry_after=retry_after))
        return self

    def content_filter(self) -> OpenAIScript:
        self.replies.append(Reply(200, completion(None, finish_reason="content_filter")))
        return self

    def refusal(self, text: str = "I can't help with that.") -> OpenAIScript:
        self.replies.append(Reply(200, completion(None, refusal=text, tokens_out=9)))
        return self

    def empty(self) -> OpenAIScript:
        """No choices at all."""
        body = completion(None)
        body["choices"] = []
        self.replies.append(Reply(200, body))
        return self

    def empty_content(self) -> OpenAIScript:
        self.replies.append(Reply(200, completion("", tokens_out=0)))
        return self

    def truncated(self, text: str = '{"dominant_type_overall": "path') -> OpenAIScript:
        """An answer cut off at the output limit: finish reason length, partial JSON."""
        self.replies.append(Reply(200, completion(text, finish_reason="length")))
        return self

    def hang(self, seconds: float, then: str = "{}") -> OpenAIScript:
        self.replies.append(Reply(200, completion(then), delay=seconds))
        return self


class OpenAIStub(OpenAIScript, GeminiStub):
    """``url`` is the server's root; the client's ``base_url`` is ``url + "/v1"``."""

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def on(self, match: str) -> OpenAIScript:
        script = OpenAIScript()
        self.routes.append((match, script))
        return script

    def next_reply(self, path: str, body: dict[str, Any]) -> Reply:
        if not path.endswith("/chat/completions"):
            return error_reply(404, f"no route {path}")
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

    def __enter__(self) -> OpenAIStub:
        self.thread.start()
        return self


def _content(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def prompt_text(body: dict[str, Any]) -> str:
    return "".join(_content(m) for m in body.get("messages", []) if m.get("role") == "user")


def system_text(body: dict[str, Any]) -> str:
    return "".join(
        _content(m) for m in body.get("messages", []) if m.get("role") in ("system", "developer")
    )
