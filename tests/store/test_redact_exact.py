"""store/redaction/redact.py to the value: which text is masked and exactly how, at every edge
the redactor draws (the 8-character floor, the words that mark a credential, the control
characters a terminal must not see), and HomeSecrets walking again only what a read changed.

tests/store/test_hostile_redact.py holds the properties (no generated key survives); these
tests pin the decisions one by one, each able to fail on a plausible mistake (the negative
controls at the end build that mistake with tests/mutant.py).
"""

from __future__ import annotations

import json
import os

import pytest

from store.paths import Home
from store.redaction import redact
from store.redaction.fingerprints import fingerprint
from store.redaction.redact import (
    HomeSecrets,
    Redactor,
    config_data,
    escape_controls,
    for_home,
    from_parts,
    home_secrets,
    looks_like_key,
    mask_auth_values,
    merged,
)
from tests.mutant import mutant

A = "canary-Secret-never-shown-0042"         # not key-shaped: only knowing it redacts it
B = "another-plain-value-9911"
TOKEN = "sk-test-firstkey000001"


@pytest.fixture(autouse=True)
def _no_registered() -> None:
    redact.clear_registered()
    yield
    redact.clear_registered()


# --- the credential after Authorization / Bearer / x-api-key -----------------------------------

@pytest.mark.parametrize("text, shown", [
    ("Authorization: Bearer abcdefgh1234", "Authorization: Bearer …"),
    ("AUTHORIZATION=Token zzzzzzzz9", "AUTHORIZATION=Token …"),
    ("Proxy-Authorization: Basic dXNlcjpwYXNz0123", "Proxy-Authorization: Basic …0123"),
    ("x-api-key: abcdefgh12345678xyz", "x-api-key: …8xyz"),
    ("sent Bearer abc12345 upstream", "sent Bearer … upstream"),
    ("Basic dXNlcjpwYXNz0123", "Basic …0123"),
    ("Bearer abc1234", "Bearer abc1234"),                 # 7 characters: not a credential
    ("the bearer of bad news", "the bearer of bad news"),  # a bare scheme needs a digit
    ("no header here at all, 12345678", "no header here at all, 12345678"),
])
def test_mask_auth_values_each_word(text: str, shown: str) -> None:
    assert mask_auth_values(text) == shown


def test_each_word_alone_opens_the_mask() -> None:
    """The quick pre-check must let through text naming any one of the four words."""
    for text in ("authorization: zzzzzzzz12", "x-api-key=zzzzzzzz12", "bearer zzzzzzzz12", "basic zzzzzzzz12"):
        assert mask_auth_values(text) == text.replace("zzzzzzzz12", "…"), text


# --- register, looks_like_key -----------------------------------------------------------------

def test_register_keeps_both_forms_of_eight_or_more_and_ignores_the_rest() -> None:
    redact.register("  padded-value-01  ", "short7!", None, 5)   # type: ignore[arg-type]
    r = Redactor()
    assert r.redact("x padded-value-01 y") == f"x {fingerprint('padded-value-01')} y"
    assert r.redact("x   padded-value-01   y") == f"x {fingerprint('  padded-value-01  ')} y"
    assert r.redact("a short7! b") == "a short7! b"
    redact.register("exactly8")
    assert Redactor().redact("[exactly8]") == "[…]"
    redact.clear_registered()
    assert Redactor().redact("[exactly8]") == "[exactly8]"


def test_a_value_registered_after_a_redactor_was_built_is_still_caught() -> None:
    r = Redactor([A])
    assert r.redact(B) == B
    redact.register(B)
    assert r.redact(f"{A} {B}") == f"{fingerprint(A)} {fingerprint(B)}"


@pytest.mark.parametrize("text, key", [
    (None, False), (12345678901234567890123456789012345, False), ("", False),
    ("a" * 31 + "1", True), ("a" * 30 + "1", False),             # one long token: 32 or more
    ("  " + "a1" * 16 + "  ", True),                             # stripped first
    ("a" * 40, False), ("1" * 40, False),                        # letters and digits both
    ("a1" * 16 + " x", False),                                   # one token only
    ("see ghp_" + "A" * 20, True), ("see ghp_" + "A" * 19, False),
    ("tasks-" + "a" * 20, False),                                # "sk-" must start a token
])
def test_looks_like_key_edges(text: object, key: bool) -> None:
    assert looks_like_key(text) is key


# --- Redactor --------------------------------------------------------------------------------

def test_with_secrets_returns_itself_unless_it_learns_something() -> None:
    r = Redactor([A])
    assert r.with_secrets() is r and r.with_secrets(None, "", A) is r
    grown = r.with_secrets(None, B)
    assert grown is not r
    assert grown.redact(f"{A}|{B}") == f"{fingerprint(A)}|{fingerprint(B)}"
    assert r.redact(B) == B          # the first one is left as it was


def test_a_secret_containing_another_goes_whole() -> None:
    inner, outer = "inner-secret-77", "inner-secret-77-and-more"
    for order in ((inner, outer), (outer, inner)):
        r = Redactor(order)
        assert r.redact(f"[{outer}] [{inner}]") == f"[{fingerprint(outer)}] [{fingerprint(inner)}]"


def test_a_secret_learnt_later_is_found_by_a_redactor_already_used() -> None:
    r = Redactor([A])
    assert r.redact(B) == B
    r.add(B)
    assert r.redact(B) == fingerprint(B)


@pytest.mark.parametrize("text", [A, f"{A} tail", f"head {A}", f"head{A}tail", f"{A}{A}"])
def test_a_known_secret_is_found_wherever_it_sits(text: str) -> None:
    assert Redactor([A]).redact(text) == text.replace(A, fingerprint(A))


def test_secrets_sharing_a_tail_are_told_apart() -> None:
    one, two = "first-head-tail8888", "other-head-tail8888"
    r = Redactor([one])
    assert r.redact(f"{one} {two}") == f"{fingerprint(one)} {two}"
    r.add(two)
    assert r.redact(f"{one} {two}") == f"{fingerprint(one)} {fingerprint(two)}"


def test_add_keeps_the_stripped_form_and_skips_short_values() -> None:
    r = Redactor(["  spaced-secret-1\n", "seven77", None])
    assert r.redact("<spaced-secret-1>") == f"<{fingerprint('spaced-secret-1')}>"
    assert r.redact("word seven77 word") == "word seven77 word"
    r.add("eight888")
    assert r.redact("word eight888 word") == "word … word"


def test_redact_takes_any_value_and_leaves_short_text() -> None:
    assert Redactor().redact(12345) == "12345"
    assert Redactor(["1234567890"]).redact(1234567890) == fingerprint("1234567890")
    assert Redactor().redact("sk-1234") == "sk-1234"


def test_redact_order_userinfo_known_shapes_then_headers() -> None:
    r = Redactor([A])
    text = (f"https://bob:hunter2x@proxy/v1 {A} key sk-or-v1-{'a' * 20}b1C2 "
            "Authorization: Bearer plainvalue99")
    assert r.redact(text) == (f"https://bob:***@proxy/v1 {fingerprint(A)} key sk-or-…b1C2 "
                              "Authorization: Bearer …")
    assert r(text) == r.redact(text)


def test_every_key_shape_in_one_text_is_masked() -> None:
    keys = ["sk-" + "a" * 16, "xai-" + "b" * 16, "gsk_" + "c" * 16, "AIza" + "d" * 30, "ghs_" + "e" * 20,
            "github_pat_" + "f" * 20, "hf_" + "g" * 20, "fw-" + "h" * 16, "r8_" + "i" * 20, "eyJ" + "j" * 8]
    out = Redactor().redact(" ".join(keys))
    assert out == " ".join(fingerprint(k) for k in keys)


def test_redact_obj_walks_keys_values_lists_and_tuples() -> None:
    r = Redactor([A])
    got = r.redact_obj({A: [A, (A, 3)], "n": None, "k": 1.5, "t": True})
    assert got == {fingerprint(A): [fingerprint(A), [fingerprint(A), 3]], "n": None, "k": 1.5, "t": True}
    assert r.redact_obj(A) == fingerprint(A) and r.redact_obj(7) == 7


def test_merged_knows_every_part() -> None:
    m = merged([Redactor([A]), Redactor([B]), Redactor()])
    assert m.redact(f"{A} {B}") == f"{fingerprint(A)} {fingerprint(B)}"


# --- escape_controls -------------------------------------------------------------------------

@pytest.mark.parametrize("ch, shown", [
    ("\x00", "\\x00"), ("\x1f", "\\x1f"), ("\x7f", "\\u007f"), ("\x85", "\\u0085"), ("\u00ad", "\\u00ad"),
    ("\ufeff", "\\ufeff"), ("\ufffb", "\\ufffb"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"),
    ("\ud800", "\\ud800"), ("\U000110bd", "\\ud804\\udcbd"), ("\U000e007f", "\\udb40\\udc7f"),
])
def test_escape_controls_each_kind(ch: str, shown: str) -> None:
    assert escape_controls(f"a {ch}b\u00e9") == f"a {shown}b\u00e9"


def test_escaped_text_above_c0_reads_back_as_json() -> None:
    for ch in ("\x7f", "\x85", "\u2028", "\U000110bd", "\U000e007f"):
        assert json.loads(f'"{escape_controls(ch)}"') == ch


def test_escape_controls_passes_printable_text_and_takes_any_value() -> None:
    assert escape_controls("caf\u00e9 \u2603 \U0001f600 ok") == "caf\u00e9 \u2603 \U0001f600 ok"
    assert escape_controls(42) == "42" and escape_controls(None) == "None"
    assert escape_controls(b"\x1b") == "b'\\x1b'"


# --- a home's secrets ------------------------------------------------------------------------

def _home(home: Home, *, auth: bytes | None = None, config: str | None = None, env: str | None = None) -> Home:
    if auth is not None:
        home.auth.write_bytes(auth)
    if config is not None:
        home.config.write_text(config)
    if env is not None:
        home.env.write_text(env)
    return home


def test_home_secrets_reads_store_with_a_bom_config_and_borrowed_env(tmp_home: Home) -> None:
    doc = {"credential_pool": {"p": [{"id": "aaaaaa", "access_token": A, "source": "manual"},
                                     {"id": "bbbbbb", "source": "env:BORROWED"}]}}
    _home(tmp_home, auth=b"\xef\xbb\xbf" + json.dumps(doc).encode(),
          config="custom_providers:\n  - name: x\n    api_key: config-value-0001\n    key_env: FROM_CONFIG\n",
          env=f"BORROWED={B}\nFROM_CONFIG=config-env-0002\nMY_TOKEN=named-token-0003\nPLAIN=not-a-secret-04\n")
    assert home_secrets(tmp_home) == {A, B, "config-value-0001", "config-env-0002", "named-token-0003"}
    r = for_home(tmp_home, extra=["extra-value-05", None])
    assert r.redact(f"{A} not-a-secret-04 extra-value-05") == (
        f"{fingerprint(A)} not-a-secret-04 {fingerprint('extra-value-05')}")


@pytest.mark.parametrize("auth, config", [
    (b'{"providers": {"x": {"access_token": "store-token-0001"}}', b"api_key: config-value-0001\nbad: [unclosed\n"),
    (b'{"providers": {"x": {"access_token": "store-token-0001\xff"}}}', b"api_key: config-value-0001\xff\n"),
    (b"[" * 100_000, b"api_key: config-value-0001\na: " + b"[" * 300 + b"]" * 300 + b"\n"),
])
def test_an_unreadable_file_holds_no_secret_it_can_show(tmp_home: Home, auth: bytes, config: bytes) -> None:
    """Broken JSON, bad UTF-8, nesting past the guards: no crash, and nothing half-read."""
    _home(tmp_home, auth=auth, env="PLAIN=not-a-secret-04\n")
    tmp_home.config.write_bytes(config)
    assert config_data(tmp_home) is None
    assert home_secrets(tmp_home) == set()


def test_a_store_that_is_not_a_file_holds_none(tmp_home: Home) -> None:
    os.mkfifo(tmp_home.auth)
    tmp_home.config.write_text("api_key: config-value-0001\n")
    assert home_secrets(tmp_home) == {"config-value-0001"}
    assert config_data(tmp_home) == {"api_key": "config-value-0001"}


def test_config_data_of_a_missing_file_is_none(tmp_home: Home) -> None:
    assert config_data(tmp_home) is None and home_secrets(tmp_home) == set()


def test_from_parts_equals_what_the_files_give(tmp_home: Home) -> None:
    doc = {"providers": {"nous": {"agent_key": A}}, "credential_pool": {"p": [{"source": "env:X"}]}}
    got = from_parts(doc, {"fallback": {"api_key": "config-value-0001"}}, {"X": B, "Y": "not-borrowed-9"})
    assert got._secrets == {A, B, "config-value-0001"}


# --- HomeSecrets -----------------------------------------------------------------------------

def _doc(*rows: dict, **top: object) -> dict:
    return {"credential_pool": {"p": list(rows)}, **top}


def test_a_top_level_string_is_a_secret_by_its_own_name() -> None:
    doc = {"providers": {}, "agent_key": A, "note": B}
    assert HomeSecrets().secrets(doc, None, {}) == {A}


def test_a_pool_that_is_not_a_list_is_walked_under_its_name() -> None:
    doc = {"credential_pool": {"my_token": A, "p": {"access_token": B}, "label": "plain-label-01"}}
    assert HomeSecrets().secrets(doc, None, {}) == {A, B}


def test_the_config_and_the_env_it_borrows_count() -> None:
    hs = HomeSecrets()
    env = {"CFG": B, "OTHER": "not-borrowed-9"}
    assert hs.secrets(_doc(), {"x": {"api_key": A, "key_env": "CFG"}}, env) == {A, B}
    assert hs.secrets(_doc(), {"x": {"api_key": A}}, env) == {A}


def test_the_same_secrets_are_the_same_set_and_a_change_a_new_one() -> None:
    hs = HomeSecrets()
    rows = [{"id": "aaaaaa", "access_token": A}]
    first = hs.secrets(_doc(*rows), None, {})
    assert first == {A}
    assert hs.secrets(_doc(*rows), None, {}) is first                    # new doc, same rows
    assert hs.secrets(_doc(dict(rows[0], label="x")), None, {}) is first  # new row, same secret
    both = hs.secrets(_doc(rows[0], {"id": "bbbbbb", "access_token": B}), None, {})
    assert both == {A, B}
    assert hs.secrets(_doc(rows[0]), None, {}) == {A}                   # a row removed


def test_an_empty_pool_added_keeps_the_same_redactor() -> None:
    hs = HomeSecrets()
    first = hs.redactor(_doc({"id": "aaaaaa", "access_token": A}), None, {})
    doc = _doc({"id": "aaaaaa", "access_token": A})
    doc["credential_pool"]["q"] = []
    assert hs.redactor(doc, None, {}) is first
    assert hs.redactor({"credential_pool": {"q": []}}, None, {}).redact(A) == A


def test_a_row_rewritten_in_place_with_a_new_secret_or_a_new_reference() -> None:
    """The reader gives a new pool list on each read, most rows the same objects, one new."""
    hs = HomeSecrets()
    rows = [{"id": "aaaaaa", "access_token": A}, {"id": "bbbbbb", "source": "env:ONE"}]
    env = {"ONE": "one-env-value-1", "TWO": "two-env-value-2"}
    assert hs.secrets(_doc(*rows), None, env) == {A, "one-env-value-1"}
    rows[1] = {"id": "bbbbbb", "source": "env:TWO"}                       # only its reference changed
    assert hs.secrets(_doc(*rows), None, env) == {A, "two-env-value-2"}
    rows[0] = {"id": "aaaaaa", "access_token": B}                         # only its secret changed
    assert hs.secrets(_doc(*rows), None, env) == {B, "two-env-value-2"}
    same = hs.secrets(_doc(*rows), None, env)
    rows[0] = {"id": "aaaaaa", "access_token": B, "label": "renamed"}      # nothing that counts
    assert hs.secrets(_doc(*rows), None, env) is same


def test_only_the_rows_that_are_new_objects_are_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[object] = []
    real = redact.walked_row

    def counting(row: object) -> tuple:
        walked.append(row)
        return real(row)
    monkeypatch.setattr(redact, "walked_row", counting)
    hs = HomeSecrets()
    rows = [{"id": f"{i:06x}", "access_token": f"sk-test-row{i:012d}"} for i in range(5)]
    hs.secrets(_doc(*rows), None, {})
    assert len(walked) == 5
    walked.clear()
    hs.secrets(_doc(*rows), None, {})
    assert walked == []                                       # a new list of the same rows
    rows[2] = dict(rows[2], label="x")
    assert hs.secrets(_doc(*rows), None, {}) == {r["access_token"] for r in rows}
    assert walked == [rows[2]]                                # in place: that row only
    walked.clear()
    grown = rows + [{"id": "ffffff", "access_token": A}]
    assert hs.secrets(_doc(*grown), None, {}) == {r["access_token"] for r in rows} | {A}
    assert walked == [grown[-1]]                              # grown: the new row only


def test_a_reused_id_of_a_dropped_row_is_walked_again() -> None:
    hs = HomeSecrets()
    hs.secrets(_doc({"id": "aaaaaa", "access_token": A}, {"id": "bbbbbb", "access_token": B}), None, {})
    fresh = [{"id": "cccccc", "access_token": "third-plain-value-3"}]
    assert hs.secrets(_doc(*fresh), None, {}) == {"third-plain-value-3"}


def test_the_redactor_follows_the_secrets() -> None:
    hs = HomeSecrets()
    r1 = hs.redactor(_doc({"id": "aaaaaa", "access_token": A}), None, {})
    assert r1.redact(f"x {A}") == f"x {fingerprint(A)}" and r1.redact(B) == B
    r2 = hs.redactor(_doc({"id": "aaaaaa", "access_token": B}), None, {})
    assert r2 is not r1 and r2.redact(B) == fingerprint(B) and r2.redact(A) == A


# --- negative controls: the mistake made, the test above sees it -----------------------------

def test_control_shorter_secret_first_leaves_the_rest_of_a_longer_one() -> None:
    bad = mutant("store.redaction.redact", "return sorted(found, key=len, reverse=True)",
                 "return sorted(found, key=len)")
    inner, outer = "inner-secret-77", "inner-secret-77-and-more"
    assert bad.Redactor([inner, outer]).redact(outer) != fingerprint(outer)


def test_control_a_row_rewalked_without_its_references_misses_a_borrowed_value() -> None:
    bad = mutant("store.redaction.redact", "same = same and got[1] == old[1] and got[2] == old[2]",
                 "same = same and got[1] == old[1]")
    hs = bad.HomeSecrets()
    doc = _doc({"id": "aaaaaa", "access_token": A}, {"id": "bbbbbb", "source": "env:ONE"})
    env = {"ONE": "one-env-value-1", "TWO": "two-env-value-2"}
    hs.secrets(doc, None, env)
    doc["credential_pool"]["p"][1] = {"id": "bbbbbb", "source": "env:TWO"}
    assert "two-env-value-2" not in hs.secrets(doc, None, env)


def test_control_a_pool_string_walked_without_its_name_is_missed() -> None:
    bad = mutant("store.redaction.redact", "self._walked(place, rows, parts, name=str(pool))",
                 "self._walked(place, rows, parts)")
    assert bad.HomeSecrets().secrets({"credential_pool": {"my_token": A}}, None, {}) == set()


def test_control_c1_escaped_as_c0_is_not_json() -> None:
    bad = mutant("store.redaction.redact", "if code < 0x20:", "if code < 0x100:")
    assert bad.escape_controls("\x85") == "\\x85"      # json.loads refuses \x escapes
    with pytest.raises(json.JSONDecodeError):
        json.loads(f'"{bad.escape_controls(chr(0x85))}"')


# --- found by the mutation run: parts walked once, places kept apart, a config refused ----------

def test_a_config_the_guard_refuses_holds_no_secret_and_breaks_nothing(tmp_home: Home) -> None:
    tmp_home.auth.write_text(json.dumps({"credential_pool": {"p": [{"access_token": A}]}}))
    tmp_home.config.write_text("a: " + "[" * 300 + "]" * 300 + "\napi_key: config-value-0001\n")
    assert config_data(tmp_home) is None
    assert home_secrets(tmp_home) == {A}


def test_from_parts_follows_the_env_the_config_borrows() -> None:
    got = from_parts({}, {"fallback": {"api_key": "config-value-0001", "key_env": "CFG"}}, {"CFG": B})
    assert got._secrets == {"config-value-0001", B}


def test_unchanged_parts_are_not_walked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    walked: list[object] = []
    real = redact.walk_secrets

    def counting(node: object, *rest: object) -> None:
        walked.append(node)
        real(node, *rest)
    monkeypatch.setattr(redact, "walk_secrets", counting)
    hs = HomeSecrets()
    providers, config = {"nous": {"agent_key": A}}, {"x": {"api_key": B}}
    assert hs.secrets({"providers": providers}, config, {}) == {A, B}
    assert len(walked) == 2
    walked.clear()
    assert hs.secrets({"providers": providers}, config, {}) == {A, B}
    assert walked == []
    assert hs.secrets({"providers": providers}, {"x": {}}, {}) == {A}
    assert walked == [{"x": {}}]


def test_a_pool_that_turns_from_a_value_into_a_list_is_read() -> None:
    hs = HomeSecrets()
    assert hs.secrets({"credential_pool": {"p": {"access_token": A}}}, None, {}) == {A}
    assert hs.secrets(_doc({"id": "aaaaaa", "access_token": B}), None, {}) == {B}


def test_a_token_removed_in_place_is_no_longer_a_secret() -> None:
    hs = HomeSecrets()
    rows = [{"id": "aaaaaa", "access_token": A}, {"id": "bbbbbb", "access_token": B}]
    assert hs.secrets(_doc(*rows), None, {}) == {A, B}
    rows[0] = {"id": "aaaaaa"}
    assert hs.secrets(_doc(*rows), None, {}) == {B}


def test_a_top_level_section_named_like_a_pool_keeps_both() -> None:
    doc = {"credential_pool": {"nous": [{"id": "aaaaaa", "access_token": A}]},
           "providers": {"nous": {"access_token": B}}}
    assert HomeSecrets().secrets(doc, None, {}) == {A, B}


def test_a_config_whose_reference_becomes_a_key_of_that_text_is_read_again() -> None:
    hs = HomeSecrets()
    assert hs.secrets({}, {"x": {"key_env": "value-0001-xyz"}}, {}) == set()
    assert hs.secrets({}, {"x": {"api_key": "value-0001-xyz"}}, {}) == {"value-0001-xyz"}


def _nest(levels: int, leaf: dict) -> dict:
    for _ in range(levels):
        leaf = {"n": leaf}
    return leaf


def test_each_part_is_walked_as_deep_as_a_whole_walk_goes() -> None:
    """HomeSecrets equals from_parts at the walk's depth limit too (64 levels, then nothing)."""
    for levels in (63, 64, 65):
        config = _nest(levels, {"api_key": "deep-config-0001"})
        top = _nest(levels - 1, {"agent_key": "deep-top-0002"})
        row = _nest(levels - 3, {"access_token": "deep-row-0003"})
        doc = {"providers": top, "credential_pool": {"p": [row]}}
        assert HomeSecrets().secrets(doc, config, {}) == from_parts(doc, config, {})._secrets, levels
    assert from_parts({}, _nest(64, {"api_key": "deep-config-0001"}), {})._secrets == {"deep-config-0001"}
    assert from_parts({}, _nest(65, {"api_key": "deep-config-0001"}), {})._secrets == set()
