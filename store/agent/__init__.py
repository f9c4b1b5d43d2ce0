"""What an agent process does with a pool, on the same locked store as the console.

``runtime`` (an agent: its primary, the fallback chain, the restore gate), ``pool_client``
(select, lease, report) and ``pool_headroom`` (what its readings hold back, the bench a 2xx
that said "nothing left" writes), ``outcomes`` (a request's result, whose fault it is, the
``Verdict`` value), ``judge`` (an answer read once into its ``Verdict``), ``ratelimits``
and ``headroom`` (readings kept per key), ``refresh`` (OAuth renewal), ``probe`` and
``verdicts`` (reopen probes and their cache). No network call under the lock. Imports the
store core, ``pools``, ``redaction``, ``config`` and ``dialects``.
"""
