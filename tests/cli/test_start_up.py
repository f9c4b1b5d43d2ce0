"""Start-up (issue 28): verbs are imported when they run. The CLI's entry and the parser the
console builds import no verb module and none of aiohttp, prometheus_client, Apprise or
ruamel.yaml; the stubs that stand for verbs not loaded say what the real parsers say."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from store.lock import DEFAULT_LOCK_TIMEOUT
from tui.cli import entry, verbs

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("aiohttp", "prometheus_client", "apprise", "ruamel")
VERB_MODULES = tuple(module for module, _, _ in verbs.FAMILIES)


def imported_after(code: str) -> list[str]:
    """The heavy packages and verb modules in sys.modules of a fresh interpreter after *code*."""
    probe = (f"import sys, json\n{code}\n"
             f"names = {list(HEAVY + VERB_MODULES)!r}\n"
             "print(json.dumps(sorted(n for n in names if n in sys.modules)))\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_importing_the_cli_entry_imports_no_verb_and_nothing_heavy() -> None:
    assert imported_after("import tui.cli.entry") == []


def test_the_consoles_parser_imports_no_verb_module() -> None:
    # `hermes-admin` and `hermes-admin --home DIR --read-only` open the console.
    code = "from tui.cli import entry\nentry.build_parser(['--home', 'x', '--read-only']).parse_args(['--home', 'x'])"
    assert imported_after(code) == []


def test_control_the_check_sees_what_a_verb_imports() -> None:
    """The same check, after what the proxy, the monitor and the config editors import."""
    got = imported_after("import tui.cli.proxy, tui.cli.config_verbs, store.proxy.server, store.monitor.daemon")
    assert {"aiohttp", "prometheus_client", "apprise", "ruamel", "tui.cli.proxy", "tui.cli.config_verbs"} <= set(got)


def test_a_verb_loads_its_own_family_only() -> None:
    got = imported_after("from tui.cli import entry\nentry.build_parser(['strategy', 'openrouter'])")
    assert "tui.cli.config_verbs" in got and "tui.cli.proxy" not in got and "aiohttp" not in got
    # cooldown and reset take --all-profiles: their family and the profiles family come together.
    got = imported_after("from tui.cli import entry\nentry.build_parser(['reset', 'openrouter', '1'])")
    assert {"tui.cli.store_verbs", "tui.cli.profiles"} <= set(got) and "tui.cli.monitor" not in got


def _verbs(parser: argparse.ArgumentParser) -> list[tuple[str, str | None]]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [(c.dest, c.help) for c in sub._choices_actions]


def test_the_stubs_say_what_the_real_parsers_say() -> None:
    """The index's one-line help for each verb is the help its own module registers."""
    assert _verbs(entry.build_parser([])) == _verbs(entry.build_parser())


@pytest.mark.parametrize("verb", [name for _, names, _ in verbs.FAMILIES for name, _ in names])
def test_a_verb_on_the_command_line_gets_its_real_parser(verb: str) -> None:
    lazy = entry.build_parser([verb])
    full = entry.build_parser()
    sub_of = {p: next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)) for p in (lazy, full)}
    got, want = sub_of[lazy].choices[verb], sub_of[full].choices[verb]
    assert [a.option_strings or a.dest for a in got._actions] == [a.option_strings or a.dest for a in want._actions]


def test_a_mistyped_verb_still_lists_every_verb(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        entry.build_parser(["lst"]).parse_args(["lst"])
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert all(f"'{name}'" in err for _, names, _ in verbs.FAMILIES for name, _ in names), err


def test_the_parsers_lock_timeout_is_the_locks() -> None:
    assert verbs.DEFAULT_LOCK_TIMEOUT == DEFAULT_LOCK_TIMEOUT
