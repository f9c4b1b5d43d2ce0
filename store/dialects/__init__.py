"""Provider dialects as data: the only place that knows a provider by name.

One module per family, each with its :class:`~store.dialects.dialect.Dialect`: the auth
header form, the base-path rule (where ``/v1`` goes), rate-limit and reset parsing, and
usage extraction.

- :mod:`store.dialects.openai`: OpenAI-style (OpenAI, OpenRouter, Groq, DeepSeek, Nous,
  ``custom:``): bearer, ``x-ratelimit-*``, ``prompt_tokens``;
- :mod:`store.dialects.anthropic`: ``x-api-key`` or an OAuth bearer with Hermes's betas,
  ``/v1`` on every path, ``anthropic-ratelimit-*``, ``input_tokens``;
- :mod:`store.dialects.codex`: the Codex backend (Responses): Hermes's Cloudflare headers,
  the usage endpoint's windows;
- :mod:`store.dialects.ietf`: ``Retry-After`` and the ``RateLimit`` fields any of them may send;
- :mod:`store.dialects.readings`: the values they read into (``Reading``, ``Usage``) and the
  time formats resets come in;
- :mod:`store.dialects.registry`: the table of Hermes's provider ids (dialect, default
  endpoint, protocols) and the registry of dialects.

Pure data and functions, no IO. Imports the flat store core (``outside``, ``model``) only:
``store.agent`` and ``store.proxy`` build on it.
"""
