"""What the fake provider says each answer spent, in every dialect hermes-admin reads (#29).

Off unless a script sets ``"spend"`` (:class:`Spend`): then every successful answer reports its
usage the way the real provider would:

- OpenAI chat: ``usage`` with ``prompt_tokens_details.cached_tokens`` and
  ``completion_tokens_details.reasoning_tokens``; a stream carries it in one last chunk
  (``choices: []``) when the client asked with ``stream_options.include_usage``;
- OpenRouter (a path under ``/api/v1/``): the same, with ``usage.cost`` in dollars, always
  (in the last chunk of a stream whether asked or not);
- Responses (``.../responses``): ``usage`` with ``input_tokens_details.cached_tokens`` and
  ``output_tokens_details.reasoning_tokens``; a stream ends with ``response.completed``;
- Anthropic (``.../messages``): ``usage`` with ``cache_read_input_tokens`` and
  ``cache_creation_input_tokens``; a stream says input and cache tokens in
  ``message_start`` and the output tokens in ``message_delta``.

Token counts follow each dialect's own meaning: OpenAI's prompt tokens count cached ones,
Anthropic's ``input_tokens`` does not.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

OPENROUTER_PATH = "/api/v1/"


@dataclass(frozen=True)
class Spend:
    """What every answer spends: tokens by kind, and the dollars OpenRouter reports."""

    input: int = 1200            # every input token, cache reads and writes included
    cached: int = 800            # read from the provider's cache
    cache_write: int = 100       # written to it
    output: int = 300
    reasoning: int = 120         # part of output
    cost: float = 0.0125         # usage.cost on OpenRouter answers

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Spend:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def is_openrouter(path: str) -> bool:
    return OPENROUTER_PATH in path


def chat_usage(s: Spend, path: str) -> dict[str, Any]:
    """An OpenAI chat ``usage`` (OpenRouter's with its cost)."""
    usage: dict[str, Any] = {"prompt_tokens": s.input, "completion_tokens": s.output,
                             "total_tokens": s.input + s.output,
                             "prompt_tokens_details": {"cached_tokens": s.cached},
                             "completion_tokens_details": {"reasoning_tokens": s.reasoning}}
    if is_openrouter(path):
        usage["cost"] = s.cost
    return usage


def wants_usage_chunk(req: dict[str, Any], path: str) -> bool:
    """Whether a chat stream ends with a usage chunk: asked for, or OpenRouter (always)."""
    opts = req.get("stream_options")
    return is_openrouter(path) or (isinstance(opts, dict) and opts.get("include_usage") is True)


def chat_usage_chunk(model: str, s: Spend, path: str) -> dict[str, Any]:
    return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "choices": [], "usage": chat_usage(s, path)}


def responses_usage(s: Spend) -> dict[str, Any]:
    return {"input_tokens": s.input, "output_tokens": s.output, "total_tokens": s.input + s.output,
            "input_tokens_details": {"cached_tokens": s.cached},
            "output_tokens_details": {"reasoning_tokens": s.reasoning}}


def responses_body(model: str, s: Spend) -> dict[str, Any]:
    return {"id": "resp_" + secrets.token_hex(6), "object": "response", "created_at": int(time.time()),
            "status": "completed", "model": model,
            "output": [{"type": "message", "id": "msg_fake", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "ok (fake provider)", "annotations": []}]}],
            "usage": responses_usage(s)}


def responses_events(model: str, s: Spend) -> list[bytes]:
    done = responses_body(model, s)
    started = {**done, "status": "in_progress", "output": [], "usage": None}
    return [_event("response.created", {"type": "response.created", "response": started}),
            _event("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_fake",
                                                  "output_index": 0, "content_index": 0, "delta": "ok"}),
            _event("response.completed", {"type": "response.completed", "response": done})]


def messages_usage(s: Spend) -> dict[str, Any]:
    return {"input_tokens": max(0, s.input - s.cached - s.cache_write), "output_tokens": s.output,
            "cache_read_input_tokens": s.cached, "cache_creation_input_tokens": s.cache_write}


def messages_body(model: str, s: Spend) -> dict[str, Any]:
    return {"id": "msg_" + secrets.token_hex(6), "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "ok (fake provider)"}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": messages_usage(s)}


def messages_events(model: str, s: Spend) -> list[bytes]:
    body = messages_body(model, s)
    start_usage = {**body["usage"], "output_tokens": 1}
    return [_event("message_start", {"type": "message_start",
                                     "message": {**body, "content": [], "stop_reason": None, "usage": start_usage}}),
            _event("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}}),
            _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": "ok"}}),
            _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
                                                                        "stop_sequence": None},
                                     "usage": {"output_tokens": s.output}}),
            _event("message_stop", {"type": "message_stop"})]


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
