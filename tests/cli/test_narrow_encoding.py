"""A stdout that cannot carry the fingerprint's ellipsis (``PYTHONIOENCODING=ascii``): found by a
hostile session, ``hermes-admin list`` died with "internal error: UnicodeEncodeError". Now the
boundary writes what the stream can carry (``sk-or-...0001``), after redaction, never a secret."""

from __future__ import annotations

import io
import subprocess
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from store.paths import Home
from store.redaction import redact
from tests.conftest import HERMES_ADMIN, cli_env, make_row, make_store, write_store
from tui.cli import boundary

TOKEN = "sk-or-v1-0123456789abcdefNARROWx1"
CMD = [str(HERMES_ADMIN)] if HERMES_ADMIN.exists() else [sys.executable, "-m", "tui.cli"]


def _ascii() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="ascii", write_through=True)


def test_list_on_an_ascii_stdout_shows_fingerprints_in_ascii(tmp_home: Home) -> None:
    write_store(tmp_home, make_store({"openrouter": [make_row("aaaaaa", token=TOKEN)]}))
    proc = subprocess.run([*CMD, "--home", str(tmp_home.root), "list"], capture_output=True, timeout=60,
                          env={**cli_env(tmp_home), "PYTHONIOENCODING": "ascii"})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode("ascii")                 # every byte ASCII
    assert "sk-or-...OWx1" in out and TOKEN not in out and "<-" in out


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=80), at=st.integers(0, 80))
def test_generated_text_reaches_an_ascii_stream_redacted_and_whole(text: str, at: int) -> None:
    inner = _ascii()
    line = text[:at] + TOKEN + text[at:] + "\n"
    stream = boundary.RedactingStream(inner, redact.Redactor([TOKEN]))
    stream.write(line)
    stream.flush()
    got = inner.buffer.getvalue().decode("ascii")     # nothing the stream could not carry
    assert TOKEN not in got and got.endswith("\n")


def test_control_without_the_fit_an_ascii_stream_fails() -> None:
    inner = _ascii()
    stream = boundary.RedactingStream(inner, redact.Redactor([TOKEN]))
    original = boundary.fit
    try:
        boundary.fit = lambda text, encoding: text
        try:
            stream.write(f"key {TOKEN}\n")
            raised = False
        except UnicodeEncodeError:
            raised = True
    finally:
        boundary.fit = original
    assert raised
