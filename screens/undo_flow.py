"""Undo one operator action from the console: ``u`` in the audit view, ``:undo [N|ID]``.

The same steps as ``hermes-admin undo`` (:mod:`store.ops.undo`), in the console's terms:

1. find the action and plan its undo (its history record, the file as it was, later
   operator actions on the same rows);
2. refuse, with the reason, when a later operator action changed the same rows (undo that
   one first), or when nothing is kept for it;
3. ask, naming what comes back (``Plan.describe()``), in a :class:`screens.confirm.ConfirmScreen`;
4. hand the write to the app's writer like every console write: the rows on the fresh
   auth.json under its lock, the keys of config.yaml in one locked edit. The undo is an
   operator action too, kept in the history: undoing it puts the action back.

An action on a key everywhere (``R``/``C``) changed several profiles under one id: its undo
plans and writes every one of them (:mod:`store.profiles.undo_all`) on a thread worker, as
acting everywhere does, and the flash line names the profiles put back and any that were not.
A record that cannot be used is refused with the reason, before anything is written.
"""

from __future__ import annotations

from typing import Any, Callable

from screens.confirm import ConfirmScreen
from store.errors import BadInput, StoreUnreadable
from store.ops import undo
from store.ops.write import StoreChange
from store.profiles import undo_all
from tui.services.host import Host
from tui.services.writer import WriteResult
from tui.text.format import full_time
from tui.text.sentences import READ_ONLY
from tui.text.shown import shown

NOTE = ("Only what that action changed goes back, on the file as it is now: a field an agent "
        "changed since (a new bench, new counts) is kept.")


def refusal(app: Host, which: str | None) -> tuple[str | None, list[undo_all.HomePlan] | None]:
    """(why not, plans): the undo plans of the action *which* names (an id, ``N``, None: the
    newest), one per home it changed, or why it cannot be undone from here."""
    if app.read_only:
        return READ_ONLY, None
    try:
        action_id = undo.resolve(app.home, which)
        hps = undo_all.plans(app.home, action_id)
    except (BadInput, StoreUnreadable) as exc:
        return f"cannot undo: {exc}", None
    conflicts = undo_all.conflicts(hps)
    if conflicts:
        return (f"cannot undo {action_id}: a later operator action changed the same rows: "
                + "; ".join(conflicts) + ". Undo that one first"
                + " (hermes-admin undo --force overrides)."), None
    return None, hps


def plan_heading(plan: undo.Plan) -> str:
    """``reset · openrouter of 2026-12-03 10:54:38``: the action as the audit log names it,
    never its history id alone (``:undo`` asks as ``L`` then ``u`` does)."""
    meta = plan.meta
    acts = meta.get("actions")
    action = meta.get("action") or (", ".join(map(str, acts)) if isinstance(acts, list) else "")
    if not isinstance(action, str) or not action:
        return plan.id
    pools = dict.fromkeys(str(r.get("pool")) for r in plan.rows)
    where = f" · {shown(', '.join(pools))}" if pools else (" · config.yaml" if meta.get("config") else "")
    return f"{shown(action)}{where} of {full_time(meta.get('at'))}"


def start_undo(app: Host, which: str | None, *, heading: str = "",
               on_done: Callable[[bool], Any] | None = None) -> bool:
    """Plan the undo of *which*, refuse with the reason or ask, then write. True if it asks.
    *on_done(landed)*: after each write of it, on one home or in every profile, whether it landed."""
    why, hps = refusal(app, which)
    if hps is None:
        app.notify(why or "cannot undo", severity="warning", timeout=10, markup=False)
        return False
    plan = hps[0].plan
    lines = ["Comes back as it was before that action:", *[f"  {line}" for line in undo_all.describe(hps)]]
    title = f"Undo {heading or plan_heading(plan)}?"
    if len(hps) > 1:
        lines.insert(0, f"In every profile it changed: {', '.join(hp.profile for hp in hps)}")

    def answered(yes: bool | None) -> None:
        if yes and len(hps) > 1:
            write_all(app, hps, on_done)
        elif yes:
            write(app, plan, on_done)

    app.push_screen(ConfirmScreen(title, lines, [NOTE], yes="y: undo it"), answered)
    return True


def write(app: Host, plan: undo.Plan, on_done: Callable[[bool], Any] | None = None) -> None:
    """The undo's writes through the app's writer: auth.json rows, then config.yaml keys."""
    home, timeout = app.home, app.lock_timeout

    def done(result: WriteResult) -> bool:
        if on_done is not None:
            on_done(result.ok)
        return False              # the writer still says what landed (or why not)

    if plan.rows:
        rows = [(str(r["pool"]), str(r["id"])) for r in plan.rows]
        app.writer.submit(f"undoing {plan.id}", StoreChange(undo.store_change(plan), lock_timeout=timeout),
                          rows=rows, on_done=done)
    if isinstance(plan.meta.get("config"), dict):
        app.writer.submit(f"undoing {plan.id} (config.yaml)", lambda: undo.config_edit(home, plan, timeout),
                          lock=home.config_lock, on_done=done)


def write_all(app: Host, hps: list[undo_all.HomePlan], on_done: Callable[[bool], Any] | None = None) -> None:
    """Every profile's undo of one action, on a thread worker; the flash line says what landed,
    then *on_done(landed)* (the audit view lists the undo: it landed in at least one profile)."""
    timeout, action_id = app.lock_timeout, hps[0].plan.id

    def work() -> None:
        undo_all.run(hps, via="tui", lock_timeout=timeout)
        app.call_from_thread(done)

    def done() -> None:
        back = [hp.profile for hp in hps if hp.error is None]
        text = f"undo {action_id}: put back in {', '.join(back) or 'none'}"
        for hp in hps:
            if hp.error is not None:
                text += f"; NOT put back in {hp.profile}: {hp.error}"
        notes = [n for hp in hps for w in hp.written for o in w.outcomes for n in o.notes[1:]]
        if notes:
            text += "; " + "; ".join(notes)
        bad = any(hp.error is not None for hp in hps)
        app.notify(text, severity="error" if bad else "information", timeout=12, markup=False)
        # No race with the watcher: watch_enabled is fixed when the app is made, and with it
        # off no watcher thread ever starts (on_mount), so the loop is the loader's one owner.
        if not app.watch_enabled:
            app.reload()
        if on_done is not None:
            on_done(bool(back))

    app.run_worker(work, name=f"undo-{action_id}", group="undo", thread=True, exit_on_error=False)
