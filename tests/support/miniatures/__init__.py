"""Independently written assemblers: correct ones with different strategies, and broken ones with
one defect each. ``tests/conformance/test_corpus_fairness.py`` pins each one's verdict over the
built-in corpus."""
