"""One shape for an action that is refused: a message written for the person who asked, a
stable code for programs, and the HTTP status a view answers with."""

from __future__ import annotations


class Refused(Exception):
    status = 400

    def __init__(self, message: str, *, code: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        if status is not None:
            self.status = status
