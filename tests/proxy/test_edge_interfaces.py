"""The edge no longer reaches into the Chain (#27): the door, the relay, the answers, the
redaction and the observers take narrow interfaces (the breakers and a clock, a
:class:`~store.proxy.observing.report.RoutesView`, a
:class:`~store.proxy.edge.redacting.SecretsSource`), so ``routing.chain`` is imported by the
serving layer only. Every import counts, a function-local one included. Negative control: a
copy of the tree with one edge module importing the chain is caught.
"""

from __future__ import annotations

from pathlib import Path

from store.proxy.edge.redacting import ProxySecrets, SecretsSource
from tests.import_graph import copy_tree, edges

ROOT = Path(__file__).resolve().parents[2]
CHAIN = "store.proxy.routing.chain"
BELOW_SERVING = ("store.proxy.edge", "store.proxy.observing")


def chain_importers(root: Path) -> list[str]:
    """The modules of the edge and the observers that import the chain (anywhere)."""
    return sorted(m for m, deps in edges(root).items() if m.startswith(BELOW_SERVING) and CHAIN in deps)


def test_no_edge_or_observing_module_imports_the_chain() -> None:
    assert chain_importers(ROOT) == []
    # the check looks at the right graph: the serving layer does import it
    assert CHAIN in edges(ROOT)["store.proxy.server"]


def test_control_an_edge_module_importing_the_chain_is_caught(tmp_path: Path) -> None:
    root = copy_tree(ROOT, tmp_path)
    relay = root / "store" / "proxy" / "edge" / "relay.py"
    relay.write_text(relay.read_text() + "\n\ndef _late():\n    from store.proxy.routing.chain import Chain\n"
                     "    return Chain\n")
    assert chain_importers(root) == ["store.proxy.edge.relay"]


def test_the_redactor_reads_its_secrets_through_the_source_and_rebuilds_on_a_new_doc() -> None:
    key = "plainSourceKeyNine" + "9" * 12        # no key shape: only the store says it is one
    docs = [{"credential_pool": {"openrouter": [{"id": "a", "access_token": key}]}}]
    secrets = ProxySecrets(SecretsSource(lambda: docs[-1], lambda: None, dict))
    assert key not in secrets.text(f"echo {key}")
    other = "plainSourceKeyEight" + "8" * 12
    assert other in secrets.text(f"echo {other}")           # not in the store it read
    docs.append({"credential_pool": {"openrouter": [{"id": "b", "access_token": other}]}})
    assert other not in secrets.text(f"echo {other}")       # a new document: rebuilt
