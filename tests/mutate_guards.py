"""``make mutate-guards``: the mutation score of every module that guards keys.

Each guard module is mutated by mutmut (the project's tool, ``pip install -e '.[mutate]'``)
and checked with the tests of its own area only, so a whole run fits in about 45 minutes on
2 cores. The run of one module happens in its own copy of the tree under
``.cache/mutate-guards/<module>/`` (mutmut keeps its state in ``mutants/`` of the folder it
runs in), with ``[tool.mutmut]`` set to that module and its tests. It prints one line per
module: mutants, killed, survived, no covering test, timeouts and the kill rate, where the
kill rate counts a mutant without a covering test as a survivor.

    python -m tests.mutate_guards                     # every guard module
    python -m tests.mutate_guards store/monitor/alerts.py store/proxy/routing/steering.py
    python -m tests.mutate_guards --list              # the modules and their tests
    python -m tests.mutate_guards --survivors store/monitor/alerts.py   # after a run: the diffs

The tests that reach a module only through a ``hermes-admin`` subprocess cannot kill its
mutants (the subprocess imports the unmutated tree): a guard needs in-process tests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".cache" / "mutate-guards"

# module -> the tests of its area (in-process tests; the slow multi-process ones are left out
# by the "not slow" marker of [tool.mutmut] pytest_add_cli_args). A test file that drives the
# module through a ``hermes-admin`` subprocess (tests/store/test_undo.py) is not listed: it
# kills nothing and makes every mutant it touches cost its subprocesses.
GUARDS: dict[str, list[str]] = {
    # benches and whose fault
    "store/agent/outcomes.py": ["tests/agent/test_outcomes_exact.py", "tests/guards/test_guard_fault_and_scope.py",
                                "tests/agent/test_stored_message.py", "tests/agent/test_runtime_faults.py"],
    "store/agent/judge.py": ["tests/agent/test_judge_exact.py", "tests/guards/test_guard_fault_and_scope.py",
                             "tests/agent/test_runtime_faults.py"],
    "store/pools/model_cooldowns.py": ["tests/store/test_model_cooldowns_exact.py",
                                       "tests/store/test_model_cooldowns_cap.py",
                                       "tests/store/test_policy_newest_hermes.py"],
    "store/pools/policy.py": ["tests/store/test_policy.py", "tests/store/test_policy_ttls.py",
                              "tests/store/test_policy_exact.py", "tests/store/test_policy_newest_hermes.py"],
    # eligibility and selection
    # (+ the budget filter and cache tests (#29) and proxy.prefer's (#30): in process, on a Chain)
    "store/proxy/routing/eligibility.py": ["tests/proxy/test_eligibility_exact.py",
                                   "tests/proxy/test_eligibility_budget_exact.py", "tests/proxy/test_no_key_reason.py",
                                   "tests/proxy/test_look_again.py", "tests/proxy/test_proxy_select.py",
                                   "tests/proxy/test_proxy_chain.py", "tests/budgets/test_budget_filter.py",
                                   "tests/budgets/test_budget_cache.py", "tests/pacing/test_prefer.py"],
    "store/proxy/routing/picks.py": ["tests/proxy/test_picks_exact.py", "tests/proxy/test_picks_pin_prefer_exact.py",
                             "tests/proxy/test_proxy_select.py",
                             "tests/proxy/test_proxy_chain.py", "tests/affinity/test_pins.py",
                             "tests/budgets/test_budget_cache.py", "tests/budgets/test_budget_filter.py",
                             "tests/pacing/test_prefer.py"],
    "store/pools/least_used.py": ["tests/store/test_least_used_exact.py", "tests/store/test_policy_exact.py",
                                  "tests/agent"],
    # undo and history
    "store/ops/history.py": ["tests/store/test_history_exact.py", "tests/guards/test_guard_history.py",
                             "tests/store/test_undo_harm.py", "tests/store/test_history_order.py"],
    "store/ops/undo.py": ["tests/store/test_undo_exact.py", "tests/store/test_undo_harm.py",
                          "tests/store/test_undo_units.py", "tests/store/test_undo_empty_id.py",
                          "tests/store/test_undo_config_changed_since.py"],
    "store/ops/undo_dup.py": ["tests/store/test_undo_dup_exact.py", "tests/store/test_undo_duplicate_key.py",
                              "tests/store/test_undo_exact.py"],
    # alerts
    "store/monitor/alerts.py": ["tests/monitor/test_alerts.py", "tests/monitor/test_alert_book_exact.py",
                                "tests/guards/test_guard_alerts_steering.py"],
    "store/monitor/conditions.py": ["tests/monitor/test_alerts.py", "tests/monitor/test_conditions_exact.py",
                                    "tests/monitor/test_conditions_gaps_exact.py"],
    # steering
    "store/proxy/routing/steering.py": ["tests/proxy/test_operator_reset.py", "tests/proxy/test_steering_exact.py",
                                "tests/guards/test_guard_alerts_steering.py",
                                "tests/proxy/test_reset_lifts_headroom.py"],
    # outside values
    "store/outside.py": ["tests/store/test_outside.py", "tests/store/test_outside_exact.py",
                         "tests/store/test_stored_times.py"],
    # redaction
    "store/redaction/redact.py": ["tests/store/test_redact_exact.py", "tests/store/test_hostile_redact.py",
                                  "tests/store/test_url_userinfo.py",
                                  "tests/store/test_home_secrets.py", "tests/store/test_auth_value_redaction.py",
                                  "tests/store/test_crash_text.py", "tests/store/test_redact_search_equal.py"],
    "store/redaction/shapes.py": ["tests/store/test_redact_exact.py", "tests/store/test_hostile_redact.py",
                                  "tests/store/test_redact_search_equal.py", "tests/proxy/test_edge_wire.py"],
    # the store's write path
    "store/transaction.py": ["tests/store/test_write_exact.py", "tests/store/test_write_path.py",
                             "tests/store/test_rel_files.py", "tests/store/test_rel_invariants.py",
                             "tests/store/test_hostile_writes.py"],
    "store/ops/write.py": ["tests/store/test_write_exact.py", "tests/store/test_write_path.py",
                           "tests/store/test_audit_reads.py"],
    "store/authfile.py": ["tests/store/test_authfile_exact.py", "tests/store/test_rel_files.py",
                          "tests/store/test_hostile_files.py",
                          "tests/store/test_hostile_shape.py", "tests/store/test_one_helper.py",
                          "tests/store/test_own_files.py", "tests/store/test_linked_store.py",
                          "tests/store/test_write_exact.py", "tests/cli/test_huge_integers.py"],
}

# Modules whose listed tests run with the ones marked slow too: the slow mark there mostly means
# an in-process proxy on a loopback port (a second or so per file), which still kills mutants.
WITH_SLOW: set[str] = {"store/proxy/routing/eligibility.py"}

COPIED = ("store", "tui", "screens", "tests", "pyproject.toml", "README.md")


def _slug(module: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", module.removesuffix(".py"))


def _prepare(module: str, tests: list[str]) -> Path:
    """A fresh copy of the tree for *module*, its [tool.mutmut] pointed at it and its tests."""
    work = WORK / _slug(module)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", "mutants")
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(src, work / name)
    text = (work / "pyproject.toml").read_text()
    base = tomllib.loads(text)["tool"]["mutmut"]
    args = list(base.get("pytest_add_cli_args", []))
    if module in WITH_SLOW and "-m" in args:
        at = args.index("-m")
        del args[at:at + 2]
    section = "\n".join([
        "[tool.mutmut]",
        f"source_paths = {json.dumps([module])}",
        f"also_copy = {json.dumps(['tui', 'screens', 'store', 'tests'])}",
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}",
        f"pytest_add_cli_args = {json.dumps(args)}",
        "", ""])
    text = re.sub(r"(?ms)^\[tool\.mutmut\]\n.*?(?=^\[)", section, text)
    (work / "pyproject.toml").write_text(text)
    return work


def _counts(work: Path, module: str) -> dict[str, int] | None:
    """What mutmut recorded for *module*: mutants by status (mutmut's own exit-code table)."""
    from mutmut.stats import status_by_exit_code
    meta = work / "mutants" / f"{module}.meta"
    if not meta.is_file():
        return None
    codes = json.loads(meta.read_text()).get("exit_code_by_key", {})
    out: dict[str, int] = {}
    for code in codes.values():
        status = status_by_exit_code[code]
        out[status] = out.get(status, 0) + 1
    out["total"] = len(codes)
    return out


def _survivors(work: Path, module: str) -> list[str]:
    meta = work / "mutants" / f"{module}.meta"
    codes = json.loads(meta.read_text()).get("exit_code_by_key", {}) if meta.is_file() else {}
    return sorted(k for k, c in codes.items() if c in (0, 5, 33))


def _line(module: str, c: dict[str, int] | None) -> str:
    if c is None:
        return f"{module:34} no result (mutmut did not finish)"
    killed = c.get("killed", 0) + c.get("timeout", 0) + c.get("caught by type check", 0)
    counted = killed + c.get("survived", 0) + c.get("no tests", 0)
    rate = f"{100 * killed / counted:5.1f} %" if counted else "    —"
    return (f"{module:34} {c['total']:5d} mutants  {killed:5d} killed  {c.get('survived', 0):4d} survived  "
            f"{c.get('no tests', 0):4d} no test  {c.get('timeout', 0):3d} timeout  {rate}")


def _commit() -> str:
    """The commit the copied tree is on, ``+changes`` when it differs from it (for the scores table)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", *COPIED], cwd=ROOT, capture_output=True,
                               text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown commit"
    return (head or "unknown commit") + (" +changes" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.mutate_guards", description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help="guard modules to run (default: all)")
    ap.add_argument("--list", action="store_true", help="print the modules and their tests, run nothing")
    ap.add_argument("--survivors", action="store_true", help="show the surviving mutants of a finished run")
    ap.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    args = ap.parse_args(argv)
    unknown = [m for m in args.modules if m not in GUARDS]
    if unknown:
        print(f"mutate-guards: not a guard module: {', '.join(unknown)} (see --list)", file=sys.stderr)
        return 2
    modules = args.modules or list(GUARDS)
    if args.list:
        for m in modules:
            print(f"{m}: {' '.join(GUARDS[m])}{' (slow-marked tests too)' if m in WITH_SLOW else ''}")
        return 0
    if args.survivors:
        for m in modules:
            work = WORK / _slug(m)
            for name in _survivors(work, m):
                shown = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=work,
                                       capture_output=True, text=True)
                print(shown.stdout or f"{name}: (no diff)")
        return 0
    lines = []
    for m in modules:
        at = _commit()
        work = _prepare(m, GUARDS[m])
        print(f"== {m} on {at}: {' '.join(GUARDS[m])}", flush=True)
        log = work / "mutmut.log"
        started = time.monotonic()
        with log.open("wb") as out:
            done = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(args.max_children)],
                                  cwd=work, stdout=out, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            print(f"   mutmut exited {done.returncode}: see {log}", flush=True)
        minutes = (time.monotonic() - started) / 60
        lines.append(f"{_line(m, _counts(work, m))}  ({minutes:.1f} min)")
        print(lines[-1], flush=True)
    print("\nkill rate per guard module (a mutant with no covering test counts as a survivor):")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
