"""store.redaction.redact.HomeSecrets: the console's secrets, walked again only where a read changed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from store.redaction import redact

_secret = st.text("abcdefXYZ0123456789", min_size=10, max_size=20).map(lambda s: "sk-test-" + s)
_row = st.fixed_dictionaries({"id": st.text("0123456789abcdef", min_size=6, max_size=6)},
                             optional={"access_token": _secret, "refresh_token": _secret,
                                       "source": st.sampled_from(["manual", "env:MY_KEY"])})
_doc = st.fixed_dictionaries({"credential_pool": st.dictionaries(
    st.sampled_from(["a", "b", "c"]), st.lists(_row, max_size=3))},
    optional={"providers": st.dictionaries(st.just("nous"), st.fixed_dictionaries(
        {"access_token": _secret}))})
_env = st.dictionaries(st.sampled_from(["MY_KEY", "OTHER", "X_TOKEN"]), _secret, max_size=3)


@settings(max_examples=200, deadline=None)
@given(docs=st.lists(st.tuples(_doc, _env), min_size=1, max_size=4), reuse=st.booleans())
def test_each_read_knows_exactly_what_a_fresh_walk_knows(docs, reuse) -> None:
    known = redact.HomeSecrets()
    last = None
    for doc, env in docs:
        if reuse and last is not None:
            # Keep the pools that did not change as the same objects, as the reader does.
            for pool, rows in last["credential_pool"].items():
                now_rows = doc["credential_pool"].get(pool)
                if now_rows == rows:
                    doc["credential_pool"][pool] = rows
                elif now_rows is not None:
                    # ...and, in a pool that changed, the rows that did not (in place).
                    for i, (new, old) in enumerate(zip(now_rows, rows, strict=False)):
                        if new == old:
                            now_rows[i] = old
        got = known.redactor(doc, None, env)
        assert got._secrets == redact.from_parts(doc, None, env)._secrets
        last = doc


def test_the_same_secrets_give_the_same_redactor_and_a_new_key_a_new_one() -> None:
    known = redact.HomeSecrets()
    rows = [{"id": "aaaaaa", "label": "one", "access_token": "sk-test-firstkey000001"}]
    first = known.redactor({"credential_pool": {"p": rows}}, None, {})
    # A new list (the pool changed) with a renamed row: the secrets are the same.
    renamed = [dict(rows[0], label="renamed")]
    assert known.redactor({"credential_pool": {"p": renamed}}, None, {}) is first
    canary = "canary-Secret-never-shown-0042"  # not key-shaped: only knowing it redacts it
    grown = renamed + [{"id": "bbbbbb", "access_token": canary}]
    after = known.redactor({"credential_pool": {"p": grown}}, None, {})
    assert after is not first
    assert canary not in after.redact(f"value {canary}")
    # Negative control: the redactor from before the key was added shows it as is.
    assert canary in first.redact(f"value {canary}")
