"""The usage a streamed answer (SSE) reports, read as the stream passes (#29).

Where each protocol's stream says what it spent:

- OpenAI Chat Completions: the final chunk's ``usage``, present when the client asked for
  it (``stream_options.include_usage``; the proxy never adds it) and always on OpenRouter,
  with its ``usage.cost``;
- Responses: ``response.completed`` (or ``.incomplete`` / ``.failed``) carries
  ``response.usage``, with ``input_tokens_details.cached_tokens`` and
  ``output_tokens_details.reasoning_tokens``;
- Anthropic Messages: ``message_start`` carries the input and cache tokens,
  ``message_delta`` the output tokens (:meth:`Usage.then` merges them).

:class:`StreamUsage` is fed the upstream's chunks as they are relayed; it never changes
them. Bounded: only complete lines that hold ``"usage"`` (and, for Responses and
Anthropic, the name of an event that carries usage) are parsed, and of a line only its
last :data:`TAIL` bytes are kept (a ``response.completed`` line holds the whole answer;
its usage is near its end). Every value passes :func:`store.dialects.readings.usage_block`.
"""

from __future__ import annotations

import json

from store import outside
from store.dialects.dialect import ANTHROPIC, RESPONSES
from store.dialects.readings import Usage, usage_block

TAIL = 16 * 1024          # bytes of a line kept while it is still arriving
SLICE = 4096              # bytes after ``"usage":`` decoded
MARKERS: dict[str, tuple[bytes, ...]] = {
    RESPONSES: (b'"response.completed"', b'"response.incomplete"', b'"response.failed"', b'"response.done"'),
    ANTHROPIC: (b'"message_start"', b'"message_delta"'),
}
_KEY = b'"usage"'
_DECODER = json.JSONDecoder()


class StreamUsage:
    """The usage one stream of *protocol* reports so far (``usage``: None until one event
    said something)."""

    __slots__ = ("markers", "notice", "usage", "_rest", "_marked")

    def __init__(self, protocol: str, notice: outside.Notice | None = None) -> None:
        self.markers = MARKERS.get(protocol, ())
        self.notice = notice
        self.usage: Usage | None = None
        self._rest = b""
        self._marked = False       # the head dropped of the line in progress named a usage event

    def feed(self, chunk: bytes) -> None:
        """The next bytes of the stream, as they came."""
        if not chunk:
            return
        data = self._rest + chunk if self._rest else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            self._keep(data)
            return
        done, marked = data[:cut], self._marked
        self._marked = False
        self._keep(data[cut + 1:])
        if _KEY in done:
            for i, line in enumerate(done.split(b"\n")):
                if _KEY in line:
                    self._line(line, marked and i == 0)

    def _keep(self, piece: bytes) -> None:
        if len(piece) > TAIL:
            if self.markers and not self._marked:
                self._marked = any(m in piece for m in self.markers)
            piece = piece[-TAIL:]
        self._rest = piece

    def end(self) -> Usage | None:
        """The stream ended (or was cut): a last line without its line break is read too."""
        rest, self._rest = self._rest, b""
        if _KEY in rest:
            self._line(rest, self._marked)
        return self.usage

    def _line(self, line: bytes, marked: bool = False) -> None:
        if self.markers and not marked and not any(m in line for m in self.markers):
            return
        at = line.rfind(_KEY)
        start = line.find(b"{", at)
        if start < 0 or line[at + len(_KEY):start].strip() != b":":
            return              # "usage": null, or a key that is not the usage object
        try:
            block, _end = _DECODER.raw_decode(line[start:start + SLICE].decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            return
        got = usage_block(block, self.notice)
        if got is not None:
            self.usage = got if self.usage is None else self.usage.then(got)
