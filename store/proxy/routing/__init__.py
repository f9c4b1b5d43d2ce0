"""The proxy's routing: which row of which route may serve a request, and what an answer does to it.

- :mod:`.chain`: the primary pool then the fallback chain, on the in-memory view;
- :mod:`.eligibility`: the one check "may this row serve now", made of named filters;
- :mod:`.picks`: choosing among the rows that may, without re-deriving them per request;
- :mod:`.affinity` and :mod:`.pins`: a conversation's name, and the key it keeps to while
  its prompt cache lives (a preference among the rows that may serve, #30);
- :mod:`.verdict` and :mod:`.request_client`: one judgement per answer, and the agent's rules
  for the benches it makes;
- :mod:`.steering`, :mod:`.overlay`, :mod:`.upstreams`, :mod:`.headroom_gate`,
  :mod:`.model_benches`, :mod:`.direct`, :mod:`.counts`, :mod:`.attempt`, :mod:`.protocols`:
  the operator's hand, benches not yet in the store, breakers, headroom, per-model benches,
  ``.env`` keys, write-behind counts, one request's walk, and which routes speak which protocol.

Routing imports neither the edge nor the observing.
"""
