"""store.pools.view: what list/the dashboard show, never the secret."""

from __future__ import annotations

from store.pools import view

KEY = "sk-or-v1-CANARYviewviewviewviewview9999"


def test_a_credential_view_repr_never_holds_the_key() -> None:
    doc = {"credential_pool": {"openrouter": [{
        "id": "a1", "label": "main", "priority": 0, "source": "manual", "access_token": KEY,
        "last_status": None, "last_status_at": None, "last_error_code": None, "last_error_reason": None,
        "last_error_message": f"invalid key {KEY}", "last_error_reset_at": None}]}}
    (pv,) = view.build_pools(doc, now=1.8e9, env={"X": KEY})
    cv = pv.credentials[0]
    assert KEY not in repr(cv) and KEY not in repr(pv)
    assert cv.fingerprint == "sk-or-…9999" and cv.fingerprint in repr(cv)
    out = cv.to_json()
    assert KEY not in str(out) and "sk-or-…9999" in out["last_error_message"]
