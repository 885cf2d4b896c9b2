"""One shape for an action that is refused: a message written for the person who asked, a
stable code for programs, and the HTTP status a view answers with. The JSON API answers a
refusal with ``{"error": message, "code": code, ...extra}`` (api.urls); pages show the
message."""

from __future__ import annotations

from typing import Any


class Refused(Exception):
    status = 400

    def __init__(
        self,
        message: str,
        *,
        code: str = "",
        status: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        if status is not None:
            self.status = status
        self.extra = extra or {}  # more for programs: the JSON answer carries it too

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"error": self.message}
        if self.code:
            body["code"] = self.code
        return {**body, **self.extra}
