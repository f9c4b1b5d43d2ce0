"""How the proxy closes a stream event an upstream cut in the middle, so that the SDKs
raise the proxy's error rather than a decode error (issue 27).

The bytes of the partial event already reached the client and cannot be taken back. The
``openai`` and ``anthropic`` SDKs read an event when its blank line comes; a partial event
closed with ``\\n\\n`` alone hands them a cut JSON text (``{"type": "content_bl``), and they
fail with a ``JSONDecodeError`` (or a ``UnicodeDecodeError``, when the cut split a
character). So :func:`closing` makes the partial event itself the proxy's error event:

- a character the cut split is completed (the SDKs decode each line as strict UTF-8);
- the event's data, a JSON object cut anywhere, is completed (:func:`object_tail`: open
  strings, numbers, literals and containers closed) with the proxy's error members last,
  where they win over the upstream's (JSON's later key wins in every SDK's parser);
- the event's name is set to the protocol's error event (``error``, ``response.failed``);
  a later ``event:`` field replaces an earlier one before the event is read.

An event whose data is already a whole JSON value (the cut came just before its blank
line) is closed as it is, and the proxy's error event follows. Data that is no JSON
object (nor its beginning) cannot be completed: the proxy's error data then follows the
partial data in the same event, which the ``anthropic`` SDK raises on (an ``error`` event
whatever its data) and no SDK reads as a success.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

EVENT_CAP = 256 * 1024     # a partial event longer than this is closed without completion
_LINE_END = re.compile(r"\r\n|\r|\n")
_LITERALS = ("true", "false", "null")
_WS = " \t\n\r"


def utf8_tail(data: bytes) -> bytes:
    """The bytes that complete a character *data*'s end cut in two (b"": none cut)."""
    dec = codecs.getincrementaldecoder("utf-8")("replace")
    dec.decode(data, final=False)
    pending = dec.getstate()[0]
    if not pending:
        return b""
    for fill in (b"\x80", b"\xbf", b"\x90"):      # a continuation byte every lead byte accepts
        for n in range(1, 4):
            try:
                (pending + fill * n).decode("utf-8")
                return fill * n
            except UnicodeDecodeError:
                continue
    return b""


def object_tail(prefix: str, members: str) -> str | None:
    """The text that makes *prefix* (the beginning of a JSON object, cut anywhere) one JSON
    object whose last members are *members* (``"k": v, ...``); None when *prefix* is not the
    beginning of a JSON object, or is one already whole."""
    tail = _tail(prefix, members)
    if tail is None:
        return None
    try:
        done = json.loads(prefix + tail)
    except (ValueError, RecursionError):
        return None
    return tail if isinstance(done, dict) else None


def _tail(prefix: str, members: str) -> str | None:  # noqa: C901 - one scanner, one state per JSON position
    stack: list[str] = []
    state = "start"          # start | key? | key | colon | value | value? | after | done
    token = ""               # a number or literal being read
    in_str = is_key = esc = False
    hexes = 0
    for ch in prefix:
        if in_str:
            if hexes:
                hexes -= 1
            elif esc:
                esc, hexes = False, 4 if ch == "u" else 0
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str, state = False, "colon" if is_key else "after"
            continue
        if token:
            if ch in "0123456789+-.eE" and token[0] not in "tfn" or token[0] in "tfn" and ch.isalpha():
                token += ch
                continue
            token, state = "", "after"
        if ch in _WS:
            continue
        if state in ("start", "value", "value?") and ch in "{[":
            stack.append(ch)
            state = "key?" if ch == "{" else "value?"
        elif state in ("start", "value", "value?") and ch == '"':
            in_str, is_key = True, False
        elif state in ("start", "value", "value?") and (ch in "-0123456789tfn"):
            token = ch
        elif state in ("key?", "key") and ch == '"':
            in_str, is_key = True, True
        elif state == "colon" and ch == ":":
            state = "value"
        elif state == "after" and ch == "," and stack:
            state = "key" if stack[-1] == "{" else "value"
        elif (state == "after" or state == "key?" and ch == "}" or state == "value?" and ch == "]") \
                and stack and ch == {"{": "}", "[": "]"}[stack[-1]]:
            stack.pop()
            state = "after" if stack else "done"
        else:
            return None
        if state == "start" and not stack and ch != "{":
            return None
    if not stack or stack[0] != "{" or state == "done":
        return None if prefix.strip() else "{" + members + "}"
    out = ""
    if in_str:
        out += ("n" if esc else "") + "0" * hexes + '"'
        state = "colon" if is_key else "after"
    elif token:
        if token[0] in "tfn":
            full = next((w for w in _LITERALS if w.startswith(token)), None)
            if full is None:
                return None
            out += full[len(token):]
        elif token[-1] in "+-.eE":
            out += "0"
        state = "after"
    while len(stack) > 1:       # close what is open inside the top object, each with a value
        out += {"key": '"":null', "colon": ":null", "value": "null"}.get(state, "")
        out += "}" if stack.pop() == "{" else "]"
        state = "after"
    return out + {"colon": ":null,", "value": "null,", "after": ","}.get(state, "") + members + "}"


def closing(partial: bytes, event: str | None, error: dict[str, Any]) -> tuple[bytes, bool]:
    """The bytes that close *partial* (the event the cut left, since its last boundary), and
    whether they are the proxy's error event themselves (False: it must still follow).
    *event*: the protocol's error event name (None: OpenAI chat, no ``event:`` field);
    *error*: the proxy's error object."""
    if not partial:
        return b"", False
    if len(partial) > EVENT_CAP:
        return b"\n\n", False
    fix = utf8_tail(partial) or (b"\n" if partial.endswith(b"\r") else b"")   # a CRLF cut in two: whole
    text = (partial + fix).decode("utf-8", "replace")
    lines = _LINE_END.split(text)
    last = lines.pop()            # the line the cut left ("" when it ended with a line break)
    data = [_value(line) for line in lines if _field(line) == "data"]
    on_data = _field(last) == "data" and ":" in last
    head = fix
    if last and not on_data:
        head += b"\n"             # end the partial line; a bare ``data`` is a data field too
        if _field(last) == "data":
            data.append("")
    if on_data:
        data.append(_value(last))
    joined = "\n".join(data)
    name = b"" if event is None else b"event: " + event.encode() + b"\n"
    body = json.dumps(error)
    if data and _whole(joined):
        return head + (b"\n" if on_data else b"") + b"\n", False
    if on_data:
        tail = object_tail(joined, body[1:-1])
        if tail is not None:
            return head + tail.encode() + b"\n" + name + b"\n", True
    else:
        tail = object_tail(joined + "\n", body[1:-1]) if data else body
        if tail is not None:
            return head + b"data: " + tail.encode() + b"\n" + name + b"\n", True
    return head + (b"\n" if on_data else b"") + name + b"data: " + body.encode() + b"\n\n", True


def _field(line: str) -> str:
    return line.partition(":")[0]


def _value(line: str) -> str:
    value = line.partition(":")[2]
    return value[1:] if value.startswith(" ") else value


def _whole(text: str) -> bool:
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True
