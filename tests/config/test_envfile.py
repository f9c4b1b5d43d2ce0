""".env parsing: the KEY=value forms operators write, read the way python-dotenv reads them."""

from __future__ import annotations

import os

import pytest

from store.envfile import parse_env, read_env, read_env_report
from store.paths import Home

CANARY = "sk-or-v1-envCANARY0123456789abcdefQ7x2"

ENV_TEXT = f"""\
# provider keys
OPENROUTER_API_KEY={CANARY}
export ANTHROPIC_API_KEY=sk-ant-plain   # trailing comment
  INDENTED = spaced value{"  "}
SINGLE='literal $HOME \\n # not a comment'
DOUBLE="line1\\nline2 \\"quoted\\" # kept"
MULTI="first
second"
HASH_IN_VALUE=abc#def
EMPTY=
EMPTY_QUOTED=""
EXPANDED=${{OPENROUTER_API_KEY}}
DEFAULTED=${{UNSET_VAR:-fallback}}
NOT AN ASSIGNMENT
UNTERMINATED="oops
OVERRIDE=first
OVERRIDE=second
"""


def test_parse_cases() -> None:
    values = parse_env(ENV_TEXT)
    assert values == {
        "OPENROUTER_API_KEY": CANARY,
        "ANTHROPIC_API_KEY": "sk-ant-plain",
        "INDENTED": "spaced value",
        "SINGLE": "literal $HOME \\n # not a comment",
        "DOUBLE": 'line1\nline2 "quoted" # kept',
        "MULTI": "first\nsecond",
        "HASH_IN_VALUE": "abc#def",
        "EMPTY": "",
        "EMPTY_QUOTED": "",
        "EXPANDED": CANARY,
        "DEFAULTED": "fallback",
        # An unterminated quote swallows nothing: the following lines still parse.
        "OVERRIDE": "second",
    }


def test_matches_python_dotenv() -> None:
    dotenv = pytest.importorskip("dotenv")
    import io

    theirs = dotenv.dotenv_values(stream=io.StringIO(ENV_TEXT), interpolate=True)
    theirs = {k: v for k, v in theirs.items() if v is not None}
    ours = parse_env(ENV_TEXT)
    # Compare the keys both parsers accept; the unterminated line is where they may differ.
    common = {k for k in theirs if k in ours and k != "UNTERMINATED"}
    assert common >= {"OPENROUTER_API_KEY", "ANTHROPIC_API_KEY", "SINGLE", "DOUBLE", "MULTI",
                      "HASH_IN_VALUE", "EXPANDED", "DEFAULTED", "OVERRIDE"}
    assert {k: ours[k] for k in common} == {k: theirs[k] for k in common}


def test_crlf_and_bom() -> None:
    assert parse_env("\ufeffA=1\r\nB='2'\r\n") == {"A": "1", "B": "2"}


def test_missing_file_is_empty_without_a_problem(tmp_home: Home) -> None:
    assert read_env(tmp_home) == {} and read_env_report(tmp_home) == ({}, None)


def test_read_from_home(tmp_home: Home) -> None:
    tmp_home.env.write_text(ENV_TEXT)
    before = (tmp_home.env.read_bytes(), tmp_home.env.stat().st_mtime_ns)
    values, problem = read_env_report(tmp_home)
    assert problem is None and values["OPENROUTER_API_KEY"] == CANARY
    assert (tmp_home.env.read_bytes(), tmp_home.env.stat().st_mtime_ns) == before


def test_latin1_fallback_like_hermes(tmp_home: Home) -> None:
    tmp_home.env.write_bytes(b"NAME=caf\xe9\n")
    assert read_env(tmp_home) == {"NAME": "caf\u00e9"}


def test_unreadable_file_is_reported_not_raised(tmp_home: Home, monkeypatch) -> None:
    tmp_home.env.write_text(f"KEY={CANARY}\n")
    if os.geteuid() == 0:  # root reads a 0000 file; simulate the denial instead
        real_open = os.open

        def deny(path, *a, **k):
            if str(path) == str(tmp_home.env):
                raise PermissionError(13, "Permission denied")
            return real_open(path, *a, **k)
        monkeypatch.setattr(os, "open", deny)
    else:
        os.chmod(tmp_home.env, 0)
    values, problem = read_env_report(tmp_home)
    assert values == {} and problem == f"{tmp_home.env}: permission denied"
    assert CANARY not in problem


def test_directory_is_reported_without_values(tmp_home: Home) -> None:
    tmp_home.env.mkdir()
    values, problem = read_env_report(tmp_home)
    assert values == {} and problem.startswith(f"{tmp_home.env}: is a directory")
    assert read_env(tmp_home) == {}
