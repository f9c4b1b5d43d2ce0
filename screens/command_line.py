"""``:``: a one-line command, k9s style, with completion and history.

The words are :mod:`screens.command_words`'s. As the operator types, the line below lists
what the word may become (each command with its key), the input suggests the rest of the
first of them (→ or Tab takes it; Tab completes as far as the candidates agree), and ↑/↓
walk the commands run before. Enter checks the command against what is on screen: a
mistake is said on the line and the command line stays; a good one dismisses with the
:class:`screens.command_words.Parsed` command, which the app runs.
"""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widgets import Input, Static

from screens.command_words import Spec, Vocabulary, candidates, completed, find, parse, split
from tui.text.shown import shown

HISTORY_LIMIT = 100
SHOWN = 8          # candidates listed under the input


class Completion(Suggester):
    """The input's grey suggestion: the rest of the first candidate."""

    def __init__(self, specs: Sequence[Spec], vocab: Vocabulary) -> None:
        super().__init__(use_cache=False, case_sensitive=True)
        self.specs, self.vocab = specs, vocab

    async def get_suggestion(self, value: str) -> str | None:
        if not value.strip():
            return None
        options = candidates(value, self.specs, self.vocab)
        if not options:
            return None
        words = split(value)
        typed = "" if value.endswith(" ") else (words[-1] if words else "")
        return value + options[0][len(typed):] if options[0].startswith(typed) else None


class CommandLine(ModalScreen["Parsed | None"]):
    """Dismisses with the checked command, or None when cancelled. *history* (oldest first)
    is the app's: a command that runs is added to it."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="command.cancel"),
        Binding("tab", "complete", "Complete", id="command.complete"),
        Binding("up", "history(-1)", "Previous command", id="command.history_back"),
        Binding("down", "history(1)", "Next command", id="command.history_forward"),
    ]

    def __init__(self, specs: Sequence[Spec], vocab: Vocabulary, history: list[str] | None = None) -> None:
        super().__init__(classes="modal")
        self.specs = list(specs)
        self.vocab = vocab
        self.history = history if history is not None else []
        self._at = len(self.history)       # where ↑/↓ are in the history; len: the new line
        self._draft = ""

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="command-box"):
            yield Input(placeholder="reset POOL [ROW] · sort ORDER · profile <name> · Tab: complete",
                        id="command", suggester=Completion(self.specs, self.vocab))
            yield Static("", id="command-hints", classes="modal-hint")
            yield Static("", id="command-error", classes="form-error -shown")

    def on_mount(self) -> None:
        self._show_hints("")
        self.query_one(Input).focus()

    @property
    def input(self) -> Input:
        return self.query_one("#command", Input)

    def _error(self, text: str) -> None:
        self.query_one("#command-error", Static).update(Text(shown(text)))

    def _show_hints(self, value: str) -> None:
        options = candidates(value, self.specs, self.vocab)
        words = split(value)
        spec = find(self.specs, words[0]) if words and (len(words) > 1 or value.endswith(" ")) else None
        # Each line through the one funnel on its own: the break between the usage and the
        # choices is ours; one inside a pool or profile name is shown escaped.
        lines = []
        if spec is not None:
            lines.append(f"{spec.usage}" + (f"  ({spec.key})" if spec.key else "") + f" — {spec.help}")
            if options:
                lines.append("  ".join(options[:SHOWN]))
        elif options:
            by_name = {s.name: s for s in self.specs}
            lines.append("  ".join(f"{o}" + (f" ({by_name[o].key})" if by_name[o].key else "")
                                   for o in options[:SHOWN]))
        if lines and len(options) > SHOWN:
            lines[-1] += f"  … +{len(options) - SHOWN}"
        hint = "\n".join(shown(line) for line in lines)
        self.query_one("#command-hints", Static).update(Text(hint or "no match"))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._show_hints(event.value)
        self._error("")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        result = parse(event.value, self.specs, self.vocab)
        if isinstance(result, str):
            self._error(result)
            return
        text = event.value.strip().lstrip(":").strip()
        if not self.history or self.history[-1] != text:
            self.history.append(text)
            del self.history[:-HISTORY_LIMIT]
        self.dismiss(result)

    def action_complete(self) -> None:
        box = self.input
        more = completed(box.value, self.specs, self.vocab)
        if more is not None:
            box.value = more
            box.cursor_position = len(more)

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        if self._at == len(self.history):
            self._draft = self.input.value         # the line being typed comes back after ↓
        self._at = max(0, min(len(self.history), self._at + step))
        value = self.history[self._at] if self._at < len(self.history) else self._draft
        self.input.value = value
        self.input.cursor_position = len(value)

    def action_cancel(self) -> None:
        self.dismiss(None)
