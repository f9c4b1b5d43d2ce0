"""Pure decisions about pools: no IO, the clock passed in.

``policy`` (effective status, selection per strategy, benches and resets, spec sections 4
and 6), ``generations`` (which Hermes generation's cooldown rules hold), ``rule_words``
(which rule gave a countdown), ``view`` (what ``list`` and the dashboard show of a
snapshot) and ``events`` (the diff of two snapshots). Imports only the store core's
``model`` and ``errors`` and ``redaction``'s fingerprints and secret ids.
"""
