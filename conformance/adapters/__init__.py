"""Ready plug-ins for popular trimmers (optional extras; the core never imports them).

Each adapter is a plain function ``f(messages, budget) -> messages`` over OpenAI Chat messages, the
simplest form the plug-in contract accepts, so ``ctxconf run --impl conformance.adapters.langchain:trim_last``
works once the extra is installed (``pip install 'ctxconf[langchain]'`` or ``'ctxconf[litellm]'``).
"""
