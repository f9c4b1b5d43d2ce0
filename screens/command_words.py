"""The ``:`` command line's words: one command per keyed action, what each takes, and
completion (pure functions, no widget).

Every binding of the app and of the dashboard that has an id is a command, named after the
id (``dashboard.reset`` → ``:reset``, ``dashboard.move_up`` → ``:move-up``), so a key added
to the bindings is a command too, and the command line, the palette and ``?`` help agree.
A command's argument says where it acts:

- a row: ``:reset openrouter backup-key`` (label or id), or a pool: ``:reset openrouter``
  (the pool's header row); in the all-profiles view a pool may be ``team-a/openrouter``;
- ``:sort status``, ``:config fallback``, ``:filter cooling``, ``:help reset``;
- and three that are not one key: ``:profile <name>|all``, ``:undo [N|ID]`` and
  ``:export csv|json FILE`` (the current view, to a file).

A row or pool command moves the cursor there, then does what the key does, so it is
refused, confirmed and written exactly as the key is.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from textual.binding import Binding

NONE, ROW, POOL, SORT, TAB, WORDS, PROFILE, UNDO, EXPORT = (
    "none", "row", "pool", "sort", "tab", "words", "profile", "undo", "export")
EXPORT_FORMATS = ("csv", "json")
# What each action's argument is (actions not named here take none).
ARGS: dict[str, str] = {
    "detail": ROW, "reset": ROW, "cooldown": ROW, "remove": ROW, "move_up": ROW, "move_down": ROW,
    "tag": ROW, "reset_everywhere": ROW, "bench_everywhere": ROW,
    "strategy": POOL, "probe": POOL,
    "sort": SORT, "config": TAB, "filter": WORDS, "help": WORDS,
}
USAGE = {NONE: "", ROW: "POOL [ROW]", POOL: "POOL", SORT: "ORDER", TAB: "[TAB]", WORDS: "[TEXT]",
         PROFILE: "NAME|all", UNDO: "[N|ID]", EXPORT: "csv|json FILE"}
# Names that are not the id's tail (two ids would give one name, or the tail says little).
NAMES = {"app.quit": "quit", "profiles.config": "profile-config", "profiles.pick": "profiles",
         "app.command_palette": "palette", "app.dismiss_notifications": "dismiss"}
ALIASES = {"q": "quit", "ctx": "profile", "context": "profile"}


@dataclass(frozen=True)
class Spec:
    """One command: its name, the action it runs (on the app or the dashboard), the key that
    does the same, and what its argument is."""

    name: str
    target: str                 # "app" | "dashboard" | "line" (the command line's own: profile, undo)
    action: str
    key: str = ""
    help: str = ""
    args: str = NONE
    binding_id: str = ""

    @property
    def usage(self) -> str:
        return f"{self.name} {USAGE[self.args]}".strip()


@dataclass(frozen=True)
class Target:
    """A row (or a pool's header, ``rid`` None) the table shows, as a command names it."""

    pool: str                   # the real pool ("openrouter")
    view: str                   # the table's pool key ("openrouter", "team-a/openrouter")
    row_key: str
    rid: str | None = None
    label: str = ""


@dataclass
class Vocabulary:
    """What the arguments may be right now: the table's rows, the sort orders, tabs, profiles."""

    targets: list[Target] = field(default_factory=list)
    sorts: Sequence[str] = ()
    tabs: Sequence[str] = ()
    profiles: Sequence[str] | None = None      # None: one home, no profiles
    undo_ids: Sequence[str] = ()               # newest first

    def pools(self) -> list[str]:
        names: dict[str, None] = {}
        for t in self.targets:
            names[t.view] = None
            names[t.pool] = None
        return list(names)


@dataclass(frozen=True)
class Parsed:
    spec: Spec
    args: tuple[str, ...] = ()
    target: Target | None = None


def _tooltip_name(b: Binding) -> str:
    return (b.tooltip or "").partition(" — ")[0] or b.description


def specs_from(groups: Iterable[tuple[str, Sequence[Binding]]], key_of: Callable[[Binding], str],
               *, profiles: bool = False) -> list[Spec]:
    """The commands of *groups* ((target, bindings), in order), with their keys as *key_of*
    shows them; a binding without an id, or whose action another command already runs, is none.
    *profiles*: a root of profiles, where ``P`` picks the profile ``:profile`` names."""
    out: dict[str, Spec] = {}
    seen: set[tuple[str, str]] = set()
    for target, bindings in groups:
        for b in bindings:
            if not b.id or "." in b.action or b.action in ("command_line", "quit"):
                continue      # no id; the app's own (dashboard.help runs app.help); ctrl+q is q's
            action = "quit" if b.id == "app.quit" else b.action.partition("(")[0]
            if (target, action) in seen:
                continue
            seen.add((target, action))
            name = NAMES.get(b.id) or b.id.partition(".")[2].replace("_", "-")
            out.setdefault(name, Spec(name, target, action, key_of(b), _tooltip_name(b),
                                      ARGS.get(action, NONE), b.id))
    undo = Spec("undo", "line", "undo", "L u", "Undo an operator action (1 = the newest)", UNDO)
    out.setdefault("undo", undo)
    out.setdefault("export", Spec("export", "line", "export", "", "Export the current view: csv or json, to a file",
                                  EXPORT))
    # On one home it is there too, to say how to get profiles.
    out.setdefault("profile", Spec("profile", "line", "profile", "P" if profiles else "",
                                   "Narrow the console to a profile, or all", PROFILE))
    return sorted(out.values(), key=lambda s: s.name)


def split(text: str) -> list[str]:
    """The words of *text* (a leading ``:`` dropped); quotes as in a shell, a lone quote kept."""
    text = text.strip().lstrip(":")
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def find(specs: Sequence[Spec], name: str) -> Spec | None:
    name = ALIASES.get(name, name)
    return next((s for s in specs if s.name == name), None)


def parse(text: str, specs: Sequence[Spec], vocab: Vocabulary) -> Parsed | str:
    """The command *text* names, its argument checked against *vocab*; else why not (a str)."""
    words = split(text)
    if not words:
        return "type a command: " + ", ".join(s.name for s in specs[:6]) + "… (Tab completes)"
    spec = find(specs, words[0])
    if spec is None:
        close = [s.name for s in specs if s.name.startswith(words[0][:2])][:4]
        return f"unknown command {words[0]!r}" + (f"; did you mean {' or '.join(close)}?" if close else
                                                  " (Tab lists the commands)")
    args = tuple(words[1:])
    kind = spec.args
    if kind == NONE and args:
        return f"{spec.name} takes no argument"
    if kind in (ROW, POOL):
        return _target(spec, args, vocab)
    if kind == SORT and (len(args) != 1 or args[0] not in vocab.sorts):
        return f"sort by one of: {', '.join(vocab.sorts)}"
    if kind == TAB and (len(args) > 1 or (args and args[0] not in vocab.tabs)):
        return f"config tabs: {', '.join(vocab.tabs)}"
    if kind == PROFILE:
        if vocab.profiles is None:
            return "profile: this console shows one home (start it with --root for profiles)"
        if len(args) != 1:
            return "profile <name> | profile all"
        if args[0] != "all" and args[0] not in vocab.profiles:
            return f"no profile {args[0]!r} (profiles: {', '.join(vocab.profiles) or 'none'})"
    if kind == EXPORT and (len(args) != 2 or args[0] not in EXPORT_FORMATS):
        return "export csv FILE | export json FILE: the current view, to a file"
    if kind == UNDO and len(args) > 1:
        return "undo [N|ID]: one action (1 = the newest; see hermes-admin history)"
    return Parsed(spec, args)


def _target(spec: Spec, args: tuple[str, ...], vocab: Vocabulary) -> Parsed | str:
    if not args or len(args) > (2 if spec.args == ROW else 1):
        return f"{spec.usage}: name the pool" + (" and the row (label or id)" if spec.args == ROW else "")
    pool, row = args[0], (args[1] if len(args) > 1 else None)
    in_pool = [t for t in vocab.targets if pool in (t.view, t.pool)]
    if not in_pool:
        return f"no pool {pool!r} on screen (pools: {', '.join(vocab.pools()) or 'none'})"
    if row is None:
        hits = [t for t in in_pool if t.rid is None]
    else:
        hits = [t for t in in_pool if t.rid is not None and row in (t.rid, t.label)]
        if not hits:
            names = ", ".join(dict.fromkeys(t.label or str(t.rid) for t in in_pool if t.rid is not None))
            return f"no row {row!r} in {pool} (rows: {names or 'none'})"
    views = sorted({t.view for t in hits})
    if len(views) > 1:
        return f"{pool} is in {', '.join(views)}: name one of them"
    if len(hits) > 1:
        return f"{row!r} names {len(hits)} rows of {pool}: use the id ({', '.join(str(t.rid) for t in hits)})"
    return Parsed(spec, args, hits[0])


def candidates(text: str, specs: Sequence[Spec], vocab: Vocabulary) -> list[str]:
    """What the word being typed may become (the command's name, or its argument)."""
    ends_with_space = text.endswith(" ")
    words = split(text)
    if not words or (len(words) == 1 and not ends_with_space):
        typed = words[0] if words else ""
        return [s.name for s in specs if s.name.startswith(typed)]
    spec = find(specs, words[0])
    if spec is None:
        return []
    done = words[1:] if ends_with_space else words[1:-1]
    typed = "" if ends_with_space else words[-1]
    options = _options(spec, done, vocab)
    return [o for o in options if o.startswith(typed)]


def _options(spec: Spec, done: list[str], vocab: Vocabulary) -> list[str]:
    kind = spec.args
    if kind in (ROW, POOL) and not done:
        return vocab.pools()
    if kind == ROW and len(done) == 1:
        rows = [t for t in vocab.targets if done[0] in (t.view, t.pool) and t.rid is not None]
        return list(dict.fromkeys([t.label for t in rows if t.label] + [str(t.rid) for t in rows]))
    if done:
        return []
    return {SORT: list(vocab.sorts), TAB: list(vocab.tabs),
            PROFILE: ["all", *(vocab.profiles or ())], EXPORT: list(EXPORT_FORMATS),
            UNDO: [str(i + 1) for i in range(min(9, len(vocab.undo_ids)))]}.get(kind, [])


def completed(text: str, specs: Sequence[Spec], vocab: Vocabulary) -> str | None:
    """*text* with its last word completed as far as every candidate agrees (None: nothing to add);
    a single candidate is completed whole and followed by a space."""
    options = candidates(text, specs, vocab)
    if not options:
        return None
    words = split(text)
    typed = "" if text.endswith(" ") or not words else words[-1]
    common = options[0]
    for o in options[1:]:
        while not o.startswith(common):
            common = common[:-1]
    if len(options) == 1:
        common = options[0]
    if len(common) <= len(typed) and len(options) > 1:
        return None
    word = shlex.quote(common) if any(c.isspace() for c in common) else common
    head = text if text.endswith(" ") or not words else text[: len(text) - len(typed)]
    return head + word + (" " if len(options) == 1 else "")
