"""Provider-native context management, as options beside contextfold's own pipeline.

:mod:`.anthropic_native`: Anthropic's server-side clearing edits and compaction.
OpenAI's Responses compaction endpoint is a summarizer:
:class:`contextfold.summarizers.responses_compaction.OpenAIResponsesCompactionSummarizer`.
"""
