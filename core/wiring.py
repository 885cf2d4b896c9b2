"""Hooks: how an app hands its outcome on to the apps above it without importing them.

An app declares what it hands on (``document_ready = Hook[[Document], None]("...")``) and
calls the hook; the composition root (config.wiring) connects the receivers once, when Django
starts. Imports then point one way: documents -> reliability -> review -> integrations, and
only config knows the whole chain. Receivers run synchronously, in the caller's transaction,
in the order they were connected; an exception in one propagates to the caller."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class Hook(Generic[P, R]):
    def __init__(self, name: str) -> None:
        self.name = name
        self._receivers: list[Callable[P, R]] = []

    def connect(self, receiver: Callable[P, R]) -> None:
        """Add ``receiver`` (once: connecting the same function again changes nothing)."""
        if receiver not in self._receivers:
            self._receivers.append(receiver)

    def disconnect(self, receiver: Callable[P, R]) -> None:
        if receiver in self._receivers:
            self._receivers.remove(receiver)

    @property
    def connected(self) -> bool:
        return bool(self._receivers)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> list[R]:
        """Each receiver's answer, in order (an empty list when nothing is connected)."""
        return [receiver(*args, **kwargs) for receiver in self._receivers]

    def __repr__(self) -> str:
        return f"<Hook {self.name}: {len(self._receivers)} receiver(s)>"
