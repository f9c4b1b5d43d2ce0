"""The one redaction boundary: text leaving hermes-admin shows keys only as fingerprints.

A :class:`Redactor` replaces, in any text or JSON-like value:

- every secret it was told about: the store's ``access_token``/``refresh_token``/
  ``agent_key`` (and any other field whose name says token/key/secret), every
  ``api_key``-like value anywhere in config.yaml (fallback, delegation, custom
  providers, auxiliary), and the ``.env`` values rows or config borrow;
- values registered at runtime with :func:`register` (an argument that was a key);
- key-shaped strings, by provider prefix and minimum length (:data:`KEY_PATTERNS`),
  so a key nobody told us about is still caught;
- the password of any URL's userinfo (``http://user:***@host``, store.redaction.urls),
  and, as a known secret, the password of every ``*url`` field of the store and config;
- the credential that follows ``Authorization``, ``Bearer`` or ``x-api-key`` in any text
  (:func:`mask_auth_values`), whatever its shape: a request line quoted in an error holds
  a key no one told us about.

Each is replaced by :func:`store.redaction.fingerprints.fingerprint` (``sk-or-…a1B2``), so the output
is idempotent: a fingerprint holds ``…`` and is never key-shaped itself.

What it leaves alone, on purpose: ordinary words and verb names (``restore-backup``,
``round_robin``, ``openrouter``), paths, ISO times, 6-hex row ids, ``sha256:``
fingerprints, and UUIDs and bare hex digests (hashes and ids look like that far more
often than keys do; a bare-hex key the store or config holds is still caught by value).

:func:`escape_controls` renders control, bidi and zero-width characters inert
(``\\x1b``); :func:`looks_like_key` says whether text is key-shaped, for refusing keys
where keys do not belong (labels, reasons, base URLs, pool names, targets).
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import yaml

from store import safeio, yamlguard
from store.envfile import read_env
from store.errors import StoreUnreadable
from store.paths import Home
from store.redaction.fingerprints import ELLIPSIS, fingerprint
from store.redaction.shapes import KEY_PATTERNS as KEY_PATTERNS
from store.redaction.shapes import looks_like_key as looks_like_key
from store.redaction.urls import mask_userinfo
from store.redaction.walk import env_borrowed, walk_secrets, walked_row

# Known secrets shorter than this are not replaced by value: a 4-letter "secret" would
# garble ordinary words everywhere. Key-shaped patterns below catch real keys anyway.
MIN_SECRET_LEN = 8

_runtime: set[str] = set()

_TOKEN = r"[A-Za-z0-9._~+/=\-]"
_GAP = r"(?:[\s\"'=:]|\\x[0-9a-fA-F]{2}|\\[0rnt])*"      # separators, and escapes a quoted line shows
# A credential after a header name and ``:``/``=`` (or a scheme; the name may close a quote, as
# in a dict's repr or JSON), or after a bare scheme when it holds a digit ("the bearer of bad
# news" stays); never a fingerprint (``…``) or a mask.
_AUTH_VALUE = re.compile(
    r"(?i)((?:\b(?:proxy-)?authorization|\bx-api-key)[\"']?(?:\s*[:=]|\s+(?=(?:bearer|basic|token)\b)|\\x[0-9a-f]{2})"
    + _GAP + r"(?:(?:bearer|basic|token)\b" + _GAP + r")?"
    + r"|\b(?:bearer|basic)\b" + _GAP + rf"(?={_TOKEN}*\d))"
    + rf"({_TOKEN}{{8,}})(?![A-Za-z0-9._~+/=\-…*])")


def mask_auth_values(text: str) -> str:
    """*text* with the credential after ``Authorization``, ``Bearer`` or ``x-api-key`` (8
    characters or more) as its fingerprint."""
    low = text.lower()          # most text names none of them: a few substring tests
    if "bearer" not in low and "authoriz" not in low and "api-key" not in low and "basic" not in low:
        return text
    return _AUTH_VALUE.sub(lambda m: m.group(1) + _fp(m.group(2)), text)


def register(*values: str | None) -> None:
    """Remember values known to be keys (an argument that held one) for every redactor."""
    for v in values:
        if isinstance(v, str):
            _runtime.update(f for f in (v, v.strip()) if len(f) >= MIN_SECRET_LEN)


def clear_registered() -> None:
    """Forget runtime-registered values (tests)."""
    _runtime.clear()


def _fp(secret: str) -> str:
    return fingerprint(secret) or ELLIPSIS


# A long text is looked up at every _STRIDE-th position only (Redactor._present).
_STRIDE, _LONG_TEXT, _FEW_SHORT = 8, 2048, 16


class Redactor:
    """Replace known secrets and key-shaped strings by fingerprints."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        self._secrets: set[str] = set()
        self._order: tuple[tuple[str, ...], int, int] = ((), -1, -1)
        self._index: dict[str, tuple[str, ...]] = {}
        self.add(*secrets)

    def with_secrets(self, *extra: str | None) -> Redactor:
        """This redactor, or a new one that also knows *extra* (this one is left as it is)."""
        new = {e for e in extra if e} - self._secrets
        if not new:
            return self
        out = Redactor(self._secrets)
        out.add(*new)
        return out

    def _known(self) -> tuple[str, ...]:
        # Longest first, so a secret containing another is replaced whole; re-sorted only
        # when this redactor or the registered set grew.
        order, n_own, n_run = self._order
        if n_own != len(self._secrets) or n_run != len(_runtime):
            order = tuple(sorted(self._secrets | _runtime, key=len, reverse=True))
            self._order = (order, len(self._secrets), len(_runtime))
            # Secrets by their last MIN_SECRET_LEN characters, so finding them costs a dict
            # look-up per position of the text, not a scan per secret (a console over 10,000
            # keys redacts each cell against 10,000 secrets). The tail, not the head: keys of one
            # provider share their head (`sk-or-v1-`), their tails are random.
            index: dict[str, list[str]] = {}
            for secret in order:
                index.setdefault(secret[-MIN_SECRET_LEN:], []).append(secret)
            self._index = {k: tuple(v) for k, v in index.items()}
            self._strided: dict[str, list[tuple[str, int]]] | None = None
            self._short = tuple(s for s in order if len(s) < MIN_SECRET_LEN + _STRIDE - 1)
        return order

    def _present(self, text: str) -> list[str]:
        """The known secrets that occur in *text*, longest first."""
        self._known()
        n, found = MIN_SECRET_LEN, set()
        if len(text) >= _LONG_TEXT and len(self._short) <= _FEW_SHORT:
            # Every _STRIDE-th window only: one of any key's last _STRIDE windows of n characters
            # falls on it, and each is indexed with how far it ends before the key's end. Keys too
            # short for that (a few) are looked for whole.
            found.update(s for s in self._short if s in text)
            ends = range(n, len(text) + 1, _STRIDE)
            windows = map(text.__getitem__, map(slice, range(0, len(text) - n + 1, _STRIDE), ends))
            for end, hit in zip(ends, map(self._strided_index().get, windows), strict=True):
                if hit:
                    found.update(c for c, k in hit if text.startswith(c, end + k - len(c)))
        else:
            index = self._index
            for end in range(n, len(text) + 1):
                candidates = index.get(text[end - n:end])
                if candidates:
                    found.update(c for c in candidates if text.endswith(c, 0, end))
        return sorted(found, key=len, reverse=True)

    def _strided_index(self) -> dict[str, list[tuple[str, int]]]:
        if self._strided is None:       # made on the first long text: its cost is the keys' count times 8
            self._strided = {}
            for secret in self._order[0]:
                if len(secret) >= MIN_SECRET_LEN + _STRIDE - 1:
                    for k in range(_STRIDE):
                        end = len(secret) - k
                        self._strided.setdefault(secret[end - MIN_SECRET_LEN:end], []).append((secret, k))
        return self._strided

    def add(self, *values: str | None) -> None:
        """Teach this redactor more secret values."""
        for v in values:
            if isinstance(v, str):
                for form in (v, v.strip()):
                    if len(form) >= MIN_SECRET_LEN:
                        self._secrets.add(form)

    def redact(self, text: Any) -> str:
        """*text* (any value, as str) with every secret and key-shaped string fingerprinted."""
        text = text if isinstance(text, str) else str(text)
        if len(text) < MIN_SECRET_LEN:
            return text  # no known secret and no key shape is this short
        text = mask_userinfo(text)   # first: a password goes whole, as ***, whatever its shape
        for s in self._present(text):
            text = text.replace(s, _fp(s))
        if any(p.search(text) for p in KEY_PATTERNS):     # most text holds none: one literal search each
            for pattern in KEY_PATTERNS:
                text = pattern.sub(lambda m: _fp(m.group(0)), text)
        return mask_auth_values(text)

    __call__ = redact

    def redact_obj(self, value: Any) -> Any:
        """A copy of a JSON-like *value* with every string (keys too) redacted."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact_obj(k): self.redact_obj(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact_obj(v) for v in value]
        return value


def escape_controls(text: Any) -> str:
    """*text* with control, bidi, zero-width and line/paragraph separator characters shown
    as escapes (``\\x1b``, ``\\u202e``), so text from a store is never sent raw to a
    terminal (no title changes, no cleared screen, no reordered line).

    Above the C0 range each escape is also a JSON escape (``\\u0085``, a surrogate pair
    beyond U+FFFF): ``json.dumps`` escapes C0 itself but passes DEL, C1 and format
    characters, so ``list --json`` stays valid JSON after the CLI's stream has escaped them.
    """
    text = text if isinstance(text, str) else str(text)
    if text.isprintable():      # no Cc, Cf, Zl, Zp or Cs character: nothing to escape (one C pass)
        return text
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            code = ord(ch)
            if code < 0x20:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(ch)
    return "".join(out)


# --- collecting a home's secrets ------------------------------------------------------------

def _load(path: Path, cap: int, parse: Any) -> Any:
    """Best-effort parse for collecting secrets: a file we cannot read holds none we can show."""
    try:
        got = safeio.read_checked(path, cap)
        return None if got is None else parse(got[0])
    except (StoreUnreadable, ValueError, RecursionError, yaml.YAMLError, UnicodeDecodeError):
        return None


def _yaml(path: Path) -> Callable[[bytes], Any]:
    def parse(raw: bytes) -> Any:
        yamlguard.check(raw, path)
        return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return parse


def config_data(home: Home) -> Any:
    """config.yaml parsed for collecting its secrets (None when it cannot be read)."""
    return _load(home.config, safeio.CONFIG_CAP, _yaml(home.config))


def home_secrets(home: Home) -> set[str]:
    """Every secret a home holds or borrows: store tokens, config keys, borrowed .env values.
    Reads the files; a reader that holds them already asks :meth:`HomeSecrets.secrets`."""
    found: set[str] = set()
    refs: set[str] = set()
    walk_secrets(_load(home.auth, safeio.AUTH_CAP, lambda b: json.loads(b.decode("utf-8-sig"))),
                 found, refs)
    walk_secrets(config_data(home), found, refs)
    env = read_env(home)
    for name, value in env.items():
        if env_borrowed(name, refs):
            found.add(value)
    return found


def from_parts(doc: Any, config_data: Any, env: Mapping[str, str]) -> Redactor:
    """A redactor from what a reader already holds (the console's last good state), so a
    reload does not read the files a second time."""
    found: set[str] = set()
    refs: set[str] = set()
    walk_secrets(doc, found, refs)
    walk_secrets(config_data, found, refs)
    found.update(v for k, v in env.items() if env_borrowed(k, refs))
    return Redactor(found)


class HomeSecrets:
    """A home's secrets kept current from successive reads, at the cost of what changed.

    The console re-reads a home on every write; walking 10,000 rows for their secrets and
    rebuilding the redactor's index each time cost more than the write itself. Each part
    (a pool's rows, a top-level value, the config, the environment) is walked again only
    when it is a new object, and :meth:`redactor` returns the *same* Redactor while the
    secrets are the same, so the text already shown through it stays valid.
    """

    def __init__(self) -> None:
        # place -> (the object walked, its secrets, its env references[, per-row cache])
        self._parts: dict[Any, tuple[Any, ...]] = {}
        self._env: frozenset[str] = frozenset()
        self._redactor = Redactor()
        self._known: frozenset[str] = frozenset()
        self._redacting: frozenset[str] = self._known   # the set self._redactor was built from

    def _walked(self, place: Any, node: Any, parts: dict[Any, Any], name: str | None = None) -> None:
        """Note the secrets of *node* (found under the field *name*, if any) at *place*."""
        hit = self._parts.get(place)
        if hit is not None and hit[0] is node:
            parts[place] = hit
            return
        found: set[str] = set()
        refs: set[str] = set()
        walk_secrets(node if name is None else {name: node}, found, refs)
        parts[place] = (node, frozenset(found), frozenset(refs))

    def _pool(self, pool: Any, rows: Any, parts: dict[Any, Any]) -> None:
        """A pool's secrets, each row walked again only when it is a new object."""
        place = ("pool", pool)
        hit = self._parts.get(place)
        if hit is not None and hit[0] is rows:
            parts[place] = hit
            return
        if not isinstance(rows, list):
            self._walked(place, rows, parts, name=str(pool))
            return
        seen: list[tuple[Any, frozenset[str], frozenset[str]]] | None = (
            hit[3] if hit is not None and len(hit) > 3 else None)
        if seen is not None and len(seen) == len(rows):
            # Rows written in place: walk those; when each found what it held before,
            # the pool's secrets are the same sets (no pass over the other rows).
            per_row = list(seen)
            same = True
            for i, (row, old) in enumerate(zip(rows, seen, strict=True)):
                if old[0] is not row:
                    per_row[i] = got = walked_row(row)
                    same = same and got[1] == old[1] and got[2] == old[2]
            if same:
                parts[place] = (rows, hit[1], hit[2], per_row)
                return
        else:
            by_id = {id(got[0]): got for got in seen or ()}
            per_row = [got if (got := by_id.get(id(row))) is not None and got[0] is row
                       else walked_row(row) for row in rows]  # an id can be reused
        parts[place] = (rows, frozenset().union(*(got[1] for got in per_row)),
                        frozenset().union(*(got[2] for got in per_row)), per_row)

    def secrets(self, doc: Any, config_data: Any, env: Mapping[str, str]) -> frozenset[str]:
        """Every secret of this read of the home (the store's tokens and keys, config.yaml's,
        the ``.env`` values they borrow, URL passwords), from what the reader already holds:
        no file is read, and only the parts that are new objects since the last call are
        walked again. The same set object while the secrets are the same."""
        parts: dict[Any, tuple[Any, ...]] = {}
        if isinstance(doc, dict):
            for key, value in doc.items():
                if key == "credential_pool" and isinstance(value, dict):
                    for pool, rows in value.items():
                        self._pool(pool, rows, parts)
                else:  # under its name: a top-level string is a secret by its name
                    self._walked(("top", key), value, parts, name=str(key))
        self._walked("config", config_data, parts)
        before = self._parts
        self._parts = parts
        refs = frozenset().union(*(p[2] for p in parts.values()))
        env_found = frozenset(v for k, v in env.items() if env_borrowed(k, refs))
        # Same places, and every part walked again found the same secrets: the same set.
        if parts.keys() == before.keys() and env_found == self._env and all(
                part[1] == before[k][1] for k, part in parts.items() if part is not before[k]):
            return self._known
        self._env = env_found
        known = frozenset().union(env_found, *(p[1] for p in parts.values()))
        if known != self._known:
            self._known = known
        return self._known

    def redactor(self, doc: Any, config_data: Any, env: Mapping[str, str]) -> Redactor:
        """The redactor for this read of the home (equal to :func:`from_parts`): the same
        object while the secrets are the same, so text shown through it stays valid."""
        known = self.secrets(doc, config_data, env)
        if known is not self._redacting:
            self._redacting = known
            self._redactor = Redactor(known)
        return self._redactor


def merged(parts: Iterable[Redactor]) -> Redactor:
    """One redactor that knows every secret of *parts* (the console over several profiles)."""
    out = Redactor()
    for part in parts:
        out.add(*part._secrets)
    return out


def for_home(home: Home, extra: Iterable[str | None] = ()) -> Redactor:
    """A redactor that knows every secret of *home* (and *extra*)."""
    r = Redactor(home_secrets(home))
    r.add(*extra)
    return r
