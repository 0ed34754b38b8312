"""Every error the conformance harness raises on purpose, in one tree.

::

    CtxconfError                      reference_impl.errors: ``message``, ``where``, ``code``
    ├── ContextAssemblyError          reference_impl.errors: assembly refused (fail closed)
    │   └── Refusal                   a plug-in refuses to assemble: an answer, not a fault
    ├── PluginLoadError (ValueError)  ``--impl`` does not name a usable assembler
    ├── ScenarioError (ValueError)    a scenario file or corpus that cannot be used
    ├── WorkloadError (ValueError)    a soak workload file that cannot be used
    ├── BaselineError (ValueError)    a baseline file that cannot be read
    ├── ReportFileError (ValueError)  a saved run (JSON lines) that cannot be read
    ├── CatalogError (ValueError)     the provider rule catalog data is inconsistent
    ├── UnknownProfileError (ValueError)
    │                                 a shape, dialect or profile the catalog does not know
    ├── EmulatorConfigError (ValueError)
    │                                 an emulator option that cannot work
    ├── CassetteError (ValueError)    a cassette or cassette option that cannot be used
    │   └── CassetteMissError (LookupError)
    │                                 no recorded interaction has this request's skeleton
    ├── RecordingError (ValueError)   a recording that cannot be read (file, interaction, field)
    ├── CredentialsError (LookupError)
    │                                 a live recording without the provider key's variable
    ├── SdkMissingError (ImportError) a round trip for a shape whose SDK is not installed
    ├── ProxyConfigError (ValueError) a proxy option that cannot work
    └── UpstreamBrokeError (ConnectionError)
                                      the proxy's upstream broke its answer mid-stream
    RuntimeError
    ├── WorkerInternalError           the harness failed inside a worker (a bug in ctxconf)
    └── ServerStartError              the emulator's server did not come up on loopback

A ``CtxconfError`` says what is wrong and where (``where``: a file, ``file: $.json.path``,
``file:line``); the command line reports it as one line and exit status 2. The errors of the
reference assembler (transcripts, shapes, token counts, config) are in :mod:`reference_impl.errors`.
Not errors, and so not here: a failed check (:class:`conformance.checks.registry.Failure`) and a
case failed under pytest (``conformance.pytest_plugin.CtxconfCaseError``) are assertions.

Plug-ins import :class:`Refusal` from :mod:`conformance.protocol`, where the contract is.
"""

from __future__ import annotations

from reference_impl.errors import ContextAssemblyError, CtxconfError

__all__ = [
    "BaselineError",
    "CassetteError",
    "CassetteMissError",
    "CatalogError",
    "CredentialsError",
    "EmulatorConfigError",
    "PluginLoadError",
    "ProxyConfigError",
    "RecordingError",
    "Refusal",
    "ReportFileError",
    "ScenarioError",
    "SdkMissingError",
    "ServerStartError",
    "UnknownProfileError",
    "UpstreamBrokeError",
    "WorkerInternalError",
    "WorkloadError",
]


class Refusal(ContextAssemblyError):  # noqa: N818 - a refusal is an answer, not a fault
    """Raised by a plug-in that refuses to assemble (fail closed). ``code`` says why."""

    def __init__(self, message: str, *, code: str = "context_assembly_refused") -> None:
        super().__init__(message, code=code)


class PluginLoadError(CtxconfError, ValueError, code="plugin_load_error"):
    """A ``--impl`` spec that does not name a usable assembler."""


class ScenarioError(CtxconfError, ValueError, code="scenario_invalid"):
    """A scenario file that cannot be used; ``where`` is ``file: json.path``."""


class WorkloadError(CtxconfError, ValueError, code="workload_invalid"):
    """A workload file that cannot be used; ``where`` is ``file: json.path``."""


class BaselineError(CtxconfError, ValueError, code="baseline_invalid"):
    """A baseline file that cannot be read; ``where`` is ``file`` or ``file: $.json.path``."""


class ReportFileError(CtxconfError, ValueError, code="report_file_invalid"):
    """A saved run that cannot be read; ``where`` is ``file:line``."""


class CatalogError(CtxconfError, ValueError, code="rule_catalog_invalid"):
    """The rule catalog data is inconsistent (unknown rule in a profile, cycle, schema error)."""


class UnknownProfileError(CtxconfError, ValueError, code="unknown_profile"):
    """A shape, dialect or profile name that the catalog does not know, or that do not fit together."""


class EmulatorConfigError(CtxconfError, ValueError, code="emulator_config_invalid"):
    """An emulator option that cannot work (a profile name the catalog does not know)."""


class CassetteError(CtxconfError, ValueError, code="cassette_invalid"):
    """A cassette or cassette option that cannot be used (bad record mode, bad metadata)."""


class CassetteMissError(CassetteError, LookupError, code="cassette_miss"):
    """No recorded interaction has this request's skeleton; names the closest one recorded."""


class RecordingError(CtxconfError, ValueError, code="recording_invalid"):
    """A recording that cannot be read: names the file, the interaction (or line) and the field."""

    def __init__(
        self, message: str, *, file: str, index: int | None = None, where: str | None = None
    ) -> None:
        self.file = file
        self.index = index
        self.reason = message
        location = file
        if index is not None:
            location += f": interactions[{index}]"
        if where:
            location += f".{where}" if index is not None else f": {where}"
        super().__init__(message, where=location)


class CredentialsError(CtxconfError, LookupError, code="credentials_missing"):
    """A live recording without the environment variable that holds the provider's key."""


class SdkMissingError(CtxconfError, ImportError, code="sdk_missing"):
    """A round trip for a shape whose official SDK is not installed; names the extra to install."""


class ProxyConfigError(CtxconfError, ValueError, code="proxy_config_invalid"):
    """A proxy option that cannot work (upstream URL, mode, profile, record folder)."""


class UpstreamBrokeError(CtxconfError, ConnectionError, code="upstream_broke_mid_stream"):
    """The proxy's upstream failed after its answer had started: the stream to the client is cut
    (the status was sent already), so the client sees a broken stream rather than a short one."""


class WorkerInternalError(RuntimeError):
    """The harness itself failed inside a worker (a bug in ctxconf, not in the plug-in)."""


class ServerStartError(RuntimeError):
    """uvicorn did not come up on loopback within the bounded wait."""
