"""Recorded traffic: what providers were sent and answered, read, matched, judged and re-sent.

* :mod:`~conformance.traffic.endpoints`: the endpoint table (URL -> shape, kind, dialect, model).
* :mod:`~conformance.traffic.reading`: the one interaction model (:class:`RecordedInteraction`)
  and the reader for every serialisation (vcrpy YAML/JSON, Ruby and R VCR, HAR, JSON-lines logs).
* :mod:`~conformance.traffic.content_coding`: a body's content codings undone within the input
  limit, for the reader and the validating proxy alike.
* :mod:`~conformance.traffic.skeleton`: request skeletons, the key cassettes are matched by.
* :mod:`~conformance.traffic.scrubbing`: secrets removed and content hashed before writing.
* :mod:`~conformance.traffic.cassette`: vcrpy for round trips and the ``ctxconf:`` metadata.
* :mod:`~conformance.traffic.verdicts`: the recorded-verdict library the runner asks.
* :mod:`~conformance.traffic.roundtrip` and :mod:`~conformance.traffic.roundtrip_cases`:
  record, replay and the probes they send.
* :mod:`~conformance.traffic.audit`: judge every request found in recordings.

Modules here import the validators and the catalog (:mod:`conformance.providers`), never the
engine, the checks or the CLI; the emulator imports only :mod:`~conformance.traffic.endpoints`
and :mod:`~conformance.traffic.skeleton` from here.
"""

__all__: list[str] = []
