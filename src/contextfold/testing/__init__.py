"""Scripted model servers on 127.0.0.1, so that agent code runs offline through the real SDK clients.

contextfold's own tests, its examples and anyone's agent loop point an
Anthropic, OpenAI (Chat Completions or Responses) or Gemini client at one of
these by its base URL, with any key, and the client's real request and
response code runs with no network and no API key:

* :mod:`contextfold.testing.scripted` — :class:`~contextfold.testing.scripted.ScriptedModel`,
  a model whose every answer is a function of the request (an agent's next
  step depends on what its tools returned), checking each request against its
  provider's rules and answering a broken one 400 as the real API would;
* :mod:`contextfold.testing.fake_llm` — :class:`~contextfold.testing.fake_llm.FakeLLMServer`,
  queues of canned replies and faults (rate limits, overloads, prompt too long,
  stalls) per route, for the error paths of a client;
* :mod:`contextfold.testing.prompt_cache` — each provider's prompt cache
  (Anthropic's breakpoints, OpenAI's automatic prefix caching by
  ``prompt_cache_key``), which both servers report their usage from;
* :mod:`contextfold.testing.server` — what ``contextfold serve-fake`` (or
  ``python3 -m contextfold serve-fake``) serves: a scripted model as a process,
  the one ``examples/`` run against without a key.

Nothing here imports the rest of contextfold: it is standard library only.
"""
