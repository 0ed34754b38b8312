"""Safe reading of user-written JSON and YAML: one home for every limit and every strictness rule.

Every YAML entry point of the project (``validate``, ``scenarios validate``, ``run --scenarios``,
``audit``, ``--config``, :meth:`reference_impl.config.AssemblyConfig.from_yaml`, cassettes) reads
through the loaders here, so one document is refused the same way everywhere:

- **Size.** A file larger than the input limit is refused before it is read
  (:class:`DocumentTooLargeError`): a 200 MB body would cost seconds and gigabytes to parse and
  judge. The limit is :data:`DEFAULT_MAX_INPUT_BYTES` (32 MiB) unless ``$CTXCONF_MAX_INPUT_BYTES``
  says otherwise (``64MiB``, ``500kB``, ``1000000``; ``0`` or ``none`` switches it off).
- **Aliases.** YAML anchors and aliases share one node, so a few hundred bytes can stand for a
  billion nodes (the "billion laughs" document); the loader is cheap, but anything that walks the
  result (a schema, the validators, a JSON dump) hangs. Before constructing anything the loaders
  measure the document *as expanded* and refuse one over :data:`MAX_YAML_NODES` nodes or with a
  recursive alias (:class:`YamlAliasBombError`). Merge keys (``<<: *anchor``), YAML's documented
  way to share a mapping, stay allowed.
- **Duplicate keys.** ``json.loads`` and ``yaml.safe_load`` keep the *last* of two equal keys and
  drop the first without a word (``budget: 8000`` then ``budget: 10`` silently means 10); the strict
  readers refuse it with the key and (for YAML) its line.
- **Depth.** Both parsers recurse once per nesting level; a document nested deeper than the
  interpreter's stack raises :class:`DocumentTooDeepError` instead of ``RecursionError``.
- **Long integers.** Python converts at most ``sys.get_int_max_str_digits()`` digits (4,300 by
  default) between an integer and its text, because the conversion takes time quadratic in the
  digits; ``json.loads`` raises a bare ``ValueError`` past it, which code waiting for a
  ``JSONDecodeError`` lets through. :func:`loads_json` raises :class:`JsonNumberTooLongError`, a
  ``JSONDecodeError`` at the number, instead; the YAML loaders refuse such an integer (decimal,
  or hexadecimal/octal/binary of that size, which would fail later when written out) with a
  ``ConstructorError`` at its line. The limit is never lifted: a judge that must give a verdict
  on such JSON reads it with each long integer capped (:func:`long_integers_capped`).
- **Named pipes.** ``open`` of a FIFO waits for a writer with no end; :func:`open_input` (under
  every file reader here) waits at most ``$CTXCONF_PIPE_WAIT_SECONDS`` (30 s) for a FIFO's first
  byte or its end, then raises :class:`PipeWithoutWriterError` (an ``OSError``). ``<(cmd)``
  (an unnamed pipe at ``/dev/fd/N``) is read as it comes.
- **NaN and Infinity.** ``json`` reads and writes ``NaN``, ``Infinity`` and ``-Infinity``; JSON
  has none, and a provider's parser refuses a body holding one. :func:`loads_json` raises
  :class:`NonFiniteNumberError`, a ``JSONDecodeError`` at the token; for data already parsed (a
  YAML ``.nan``, a plug-in's ``float("nan")``) :func:`non_finite_number` names where one is.

Writing: :func:`dump_yaml` is the one YAML writer (cassettes, ``fuzz --out`` scenarios). PyYAML's
emitter writes U+0085, U+2028 and U+2029 raw inside single-quoted and block scalars, where a reader
folds them into a space or a newline: such strings are written double-quoted, where they are
escaped, so every string reads back as written.

The loaders are libyaml's ``CSafeLoader`` when PyYAML was built with it (several times faster),
else the pure-Python ``SafeLoader``; only safe constructors are ever registered.
"""

from __future__ import annotations

import errno
import functools
import json
import math
import os
import re
import selectors
import stat
import sys
from collections.abc import Hashable
from pathlib import Path
from typing import Any, BinaryIO, Final

import yaml

__all__ = [
    "DEFAULT_MAX_INPUT_BYTES",
    "DEFAULT_PIPE_WAIT_S",
    "INPUT_LIMIT_ENV",
    "MAX_YAML_NODES",
    "PIPE_WAIT_ENV",
    "DocumentLimitError",
    "DocumentTooDeepError",
    "DocumentTooLargeError",
    "DuplicateKeyError",
    "JsonNumberTooLongError",
    "NonFiniteNumberError",
    "PipeWithoutWriterError",
    "SafeYamlLoader",
    "StrictYamlLoader",
    "YamlAliasBombError",
    "YamlDumper",
    "check_input_size",
    "dump_yaml",
    "int_digit_limit",
    "json_problem",
    "load_json_strict",
    "load_yaml_safe",
    "load_yaml_strict",
    "loads_json",
    "long_integers_capped",
    "max_input_bytes",
    "non_finite_name",
    "non_finite_number",
    "open_input",
    "pipe_wait_seconds",
    "read_input_bytes",
    "read_input_text",
]

_MERGE_TAG: Final = "tag:yaml.org,2002:merge"
_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

DEFAULT_MAX_INPUT_BYTES: Final = 32 * 1024 * 1024
INPUT_LIMIT_ENV: Final = "CTXCONF_MAX_INPUT_BYTES"
DEFAULT_PIPE_WAIT_S: Final = 30.0
PIPE_WAIT_ENV: Final = "CTXCONF_PIPE_WAIT_SECONDS"
MAX_YAML_NODES: Final = 1_000_000
_UNITS: Final = {
    "": 1,
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}


class DuplicateKeyError(ValueError):
    """A JSON object with the same key twice (``json`` would keep only the last value)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r} in one object (the first value would be lost)")
        self.key = key


class JsonNumberTooLongError(json.JSONDecodeError):
    """JSON text with an integer of more digits than Python converts (``digits`` of them, over
    ``limit``): a ``JSONDecodeError`` at the number, so every reader that names bad JSON names
    this too."""

    def __init__(self, doc: str, pos: int, digits: int, limit: int) -> None:
        super().__init__(
            f"an integer of {digits:,} digits, more than the {limit:,} Python reads", doc, pos
        )
        self.digits = digits
        self.limit = limit


_LOG10_OF_60: Final = math.log10(60)
"""Decimal digits per part of a base-60 YAML integer."""
_DIGIT_LIMIT_WORDS: Final = "integer string conversion"
"""In the message of the ``ValueError`` Python raises past its digit limit."""


def int_digit_limit() -> int:
    """``sys.get_int_max_str_digits()``; 0 where there is no limit (Python before 3.10.7)."""
    get = getattr(sys, "get_int_max_str_digits", None)
    return int(get()) if get is not None else 0


@functools.lru_cache(maxsize=4)
def _integer_tokens(limit: int) -> re.Pattern[str]:
    """A JSON string (matched whole, so digits inside one are never taken for a number) or an
    integer literal of more than ``limit`` digits, its sign in group 1 and digits in group 2. A
    JSON integer has no leading zero (``0123`` is no number, and must stay none), and a number
    with a fraction or an exponent is a float, read at any length."""
    return re.compile(
        r'"[^"\\]*(?:\\.[^"\\]*)*"'
        r"|(?<![\d.eE+-])(-?)([1-9]\d{" + str(limit) + r",})(?![\d.eE])",
        re.ASCII,
    )


def _long_integer(text: str, limit: int) -> tuple[int, int] | None:
    """Where the first integer literal of more than ``limit`` digits starts in JSON ``text``,
    and its digits."""
    for found in _integer_tokens(limit).finditer(text):
        if found.group(2) is not None:
            return found.start(), len(found.group(2))
    return None


def long_integers_capped(text: str | bytes) -> bytes | None:
    """JSON ``text`` with every integer literal of more digits than Python reads replaced by the
    longest one it reads, sign kept (4,300 nines by default), as UTF-8 bytes; ``None`` when there
    is none. For a judge that must give a verdict on such a body (the validating
    proxy): the value stays an integer beyond any bound a provider sets, the rest of the body is
    read as written, and the limit is not lifted."""
    limit = int_digit_limit()
    if not limit:
        return None
    doc = _text_of(text)
    # a quick scan: no run of digits that long. It starts only where a run starts: tried at
    # every digit, a body of runs just under the limit took time quadratic in the limit
    if re.search(f"(?<![0-9])[1-9][0-9]{{{limit}}}", doc) is None:
        return None
    found = False

    def cap(match: re.Match[str]) -> str:
        nonlocal found
        if match.group(2) is None:
            return match.group(0)
        found = True
        return match.group(1) + "9" * limit

    capped = _integer_tokens(limit).sub(cap, doc)
    return capped.encode("utf-8", "surrogatepass") if found else None


class NonFiniteNumberError(json.JSONDecodeError):
    """JSON text holding ``NaN``, ``Infinity`` or ``-Infinity`` (``token``), which Python's
    ``json`` reads and writes but JSON does not have: a ``JSONDecodeError`` at the token, so every
    reader that names bad JSON names this too."""

    def __init__(self, doc: str, pos: int, token: str) -> None:
        super().__init__(f"{token} {_NOT_A_JSON_NUMBER}", doc, pos)
        self.token = token


_NOT_A_JSON_NUMBER: Final = "is not a JSON number"
"""What is said of ``NaN``/``Infinity``, in the text (``NaN is not a JSON number``) and in parsed
data (``NaN at temperature is not a JSON number``)."""


class _ConstantSeen(Exception):  # noqa: N818 - internal signal, never leaves loads_json
    """Raised by the ``parse_constant`` hook of :func:`loads_json` at ``NaN``/``Infinity``."""


def _refuse_constant(token: str) -> object:
    raise _ConstantSeen(token)


def _constant_at(doc: str) -> int:
    """Where the first ``NaN``/``Infinity``/``-Infinity`` outside a string starts in ``doc``."""
    for found in re.finditer(r'"[^"\\]*(?:\\.[^"\\]*)*"|(-?Infinity|NaN)', doc):
        if found.group(1) is not None:
            return found.start()
    return 0  # pragma: no cover - json.loads met one, so the scan does


def _text_of(text: str | bytes) -> str:
    """The text ``json.loads`` reads (its encoding found as it finds it), so positions agree."""
    if isinstance(text, bytes):
        return text.decode(json.detect_encoding(text), "surrogatepass")
    return text


def json_problem(exc: json.JSONDecodeError) -> str:
    """The parser's message and the column it stopped at (``exc.msg`` alone has no place):
    ``Expecting value at column 41``, ``Invalid control character at column 45``, ``NaN is not
    a JSON number at column 27``. The one wording of bad JSON: callers say ``not valid JSON
    (...)`` around it, and the line where they say where."""
    at = " " if exc.msg.endswith(" at") else " at "
    return f"{exc.msg}{at}column {exc.colno}"


def loads_json(text: str | bytes, **options: Any) -> Any:
    """``json.loads(text, **options)`` for JSON as providers read it: ``NaN``, ``Infinity`` and
    ``-Infinity`` are refused (:class:`NonFiniteNumberError`) unless ``options`` give a
    ``parse_constant`` of their own, and an integer too long to read is raised as
    :class:`JsonNumberTooLongError` (a ``JSONDecodeError``) instead of a bare ``ValueError``.
    An error raised by one of ``options``' hooks passes through as it is."""
    options.setdefault("parse_constant", _refuse_constant)
    try:
        return json.loads(text, **options)
    except json.JSONDecodeError:
        raise
    except _ConstantSeen as exc:
        doc = _text_of(text)
        raise NonFiniteNumberError(doc, _constant_at(doc), exc.args[0]) from None
    except ValueError as exc:
        limit = int_digit_limit()
        if type(exc) is not ValueError or not limit or _DIGIT_LIMIT_WORDS not in str(exc):
            raise  # a hook's own error, or not the digit limit
        doc = _text_of(text)
        found = _long_integer(doc, limit)
        if found is None:
            raise
        raise JsonNumberTooLongError(doc, found[0], found[1], limit) from None


def non_finite_name(number: float) -> str:
    """The name Python's ``json`` writes for a float JSON does not have (``NaN``, ``Infinity``,
    ``-Infinity``)."""
    if math.isnan(number):
        return "NaN"
    return "Infinity" if number > 0 else "-Infinity"


def non_finite_number(value: object) -> str | None:
    """Where the first float JSON does not have (NaN, ±Infinity) is in parsed JSON data (dicts,
    lists and scalars), said as ``NaN at messages.2.content.0.input.retries is not a JSON number``;
    ``None`` when there is none. Walks without recursion, any depth."""
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                where = path or "the top level"
                return f"{non_finite_name(item)} at {where} {_NOT_A_JSON_NUMBER}"
        elif isinstance(item, dict):
            pairs = [(v, f"{path}.{k}" if path else str(k)) for k, v in item.items()]
            stack.extend(reversed(pairs))
        elif isinstance(item, list | tuple):
            stack.extend(
                reversed([(v, f"{path}.{i}" if path else str(i)) for i, v in enumerate(item)])
            )
    return None


class DocumentLimitError(ValueError):
    """A document refused by one of the reading limits (size, aliases, depth)."""


class DocumentTooDeepError(DocumentLimitError):
    """The document nests deeper than the parser's recursion allows."""

    def __init__(self) -> None:
        super().__init__("nested too deeply to read (thousands of levels of [ or {)")


class DocumentTooLargeError(DocumentLimitError):
    """The input is larger than the configured input limit."""

    def __init__(self, size: int, limit: int, *, partial: bool = False) -> None:
        # ``partial``: reading stopped past the limit (a stream, a special file): the whole size
        # is not known, so it is not given ("32.0 MiB is over the 32.0 MiB input limit").
        what = "more than" if partial else f"{_human(size)} is over"
        super().__init__(
            f"input too large: {what} the {_human(limit)} input limit "
            f"(set {INPUT_LIMIT_ENV}, e.g. {INPUT_LIMIT_ENV}=256MiB, to raise it)"
        )
        self.size = size
        self.limit = limit


class YamlAliasBombError(DocumentLimitError):
    """YAML aliases that expand past :data:`MAX_YAML_NODES` nodes, or refer to themselves."""

    def __init__(self, what: str, line: int | None = None) -> None:
        at = f" (line {line})" if line is not None else ""
        super().__init__(f"YAML aliases {what}{at}: refused")
        self.line = line


def _human(size: int) -> str:
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor:
            return f"{size / factor:.1f} {unit}"
    return f"{size} bytes"


def max_input_bytes() -> int | None:
    """The input limit in bytes (``None``: no limit), from ``$CTXCONF_MAX_INPUT_BYTES``."""
    raw = os.environ.get(INPUT_LIMIT_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_INPUT_BYTES
    if raw.lower() in {"0", "none", "off"}:
        return None
    found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-zA-Z]*)", raw)
    unit = found.group(2).lower() if found else ""
    if found is None or unit not in _UNITS:
        raise DocumentLimitError(
            f"${INPUT_LIMIT_ENV}={raw!r} is not a size (examples: 1000000, 500kB, 64MiB, none)"
        )
    return int(float(found.group(1)) * _UNITS[unit])


def check_input_size(size: int) -> None:
    """Raise :class:`DocumentTooLargeError` when ``size`` bytes are over the input limit."""
    limit = max_input_bytes()
    if limit is not None and size > limit:
        raise DocumentTooLargeError(size, limit)


class PipeWithoutWriterError(TimeoutError):
    """A named pipe (FIFO) given as input that nothing wrote to, and no writer closed, within
    the wait (:func:`pipe_wait_seconds`): an ``OSError`` whose ``strerror`` says so, so every
    reader that names a file it cannot read names this too."""

    def __init__(self, path: str | Path, wait: float) -> None:
        super().__init__(
            errno.ETIMEDOUT,
            f"a named pipe nothing was written to within {wait:g} s (no writer, or one that "
            f"has written nothing yet: start the writer first, or set {PIPE_WAIT_ENV} to wait "
            "longer)",
            str(path),
        )


def pipe_wait_seconds() -> float:
    """How long a named pipe given as input is waited on for its first byte or its end, from
    ``$CTXCONF_PIPE_WAIT_SECONDS`` (:data:`DEFAULT_PIPE_WAIT_S`, 30, when unset)."""
    raw = os.environ.get(PIPE_WAIT_ENV, "").strip()
    if not raw:
        return DEFAULT_PIPE_WAIT_S
    try:
        wait = float(raw)
    except ValueError:
        wait = math.nan
    if not (math.isfinite(wait) and wait > 0):
        raise DocumentLimitError(f"${PIPE_WAIT_ENV}={raw!r} is not a number of seconds above 0")
    return wait


def open_input(path: str | Path) -> BinaryIO:
    """``open(path, "rb")`` for an input file, except that a named pipe (FIFO) never blocks for
    ever: ``open`` waits for a writer with no end, so a FIFO is opened without waiting, and
    waited on for its first byte or its end for :func:`pipe_wait_seconds`
    (:class:`PipeWithoutWriterError` past it), then read as usual. A pipe that is not named
    (``<(cmd)`` passes ``/dev/fd/N``) has its writer already and is read as it comes, slow or not.

    Raises ``OSError`` as ``open`` does and :class:`DocumentLimitError` for a bad wait setting."""
    try:
        fifo = stat.S_ISFIFO(os.stat(path).st_mode)
    except (OSError, ValueError):
        fifo = False  # open says what is wrong
    if not fifo:
        return Path(path).open("rb")
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not _unnamed_pipe(descriptor):
            wait = pipe_wait_seconds()
            with selectors.DefaultSelector() as selector:
                selector.register(descriptor, selectors.EVENT_READ)
                if not selector.select(wait):  # data, or a writer came and closed: readable
                    raise PipeWithoutWriterError(path, wait)
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def _unnamed_pipe(descriptor: int) -> bool:
    """Whether ``descriptor`` is a pipe with no name in the file system (Linux calls it
    ``pipe:[inode]``), made by a process with its write end: it never waits for a writer to
    come, and reading it ends when its writers have closed it."""
    try:
        return os.readlink(f"/proc/self/fd/{descriptor}").startswith("pipe:")
    except OSError:
        return False


def read_input_bytes(path: str | Path) -> bytes:
    """A file's bytes (``-``: standard input), refused by size *before* it is read in full; a
    named pipe is waited on for a bounded time (:func:`open_input`).

    Raises ``OSError`` as ``open`` does (:class:`PipeWithoutWriterError` among them) and
    :class:`DocumentTooLargeError`."""
    limit = max_input_bytes()
    if str(path) == "-":
        stream = sys.stdin.buffer
        data = stream.read() if limit is None else stream.read(limit + 1)
    else:
        with open_input(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            check_input_size(size)
            data = handle.read() if limit is None else handle.read(limit + 1)
    if limit is not None and len(data) > limit:  # a stream, a file that grew, a special file
        raise DocumentTooLargeError(len(data), limit, partial=True)
    return data


def read_input_text(path: str | Path) -> str:
    """:func:`read_input_bytes` decoded as UTF-8 (``UnicodeDecodeError`` otherwise)."""
    return read_input_bytes(path).decode("utf-8")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def check_yaml_expansion(root: yaml.Node, limit: int = MAX_YAML_NODES) -> None:
    """Refuse a node graph that expands to more than ``limit`` nodes or contains a cycle.

    Shared nodes (aliases) are measured once each but counted every time they are used, so the
    cost is linear in the *written* document while the measure is the *expanded* one."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            total = 1 + sum(sizes[id(child)] for child in _children(node))
            open_nodes.discard(key)
            if total > limit:
                raise YamlAliasBombError(
                    f"expand to more than {limit:,} nodes (a 'billion laughs' document)",
                    node.start_mark.line + 1,
                )
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise YamlAliasBombError(
                "refer to their own ancestor (a document that never ends)", node.start_mark.line + 1
            )
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


_YAML_INT: Final = re.compile(
    r"""^(?:[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+)$""",
    re.VERBOSE,
)
"""PyYAML's (YAML 1.1) implicit int, without its base-60 form (``1:30:00`` read as 5400)."""
_YAML_FLOAT: Final = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.VERBOSE,
)
"""PyYAML's (YAML 1.1) implicit float, without its base-60 form (``1:30.5``)."""


def _without_base_60(resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]]) -> dict[Any, Any]:
    """PyYAML's implicit resolvers, with no plain scalar read as a base-60 number: YAML 1.2 has
    none, and ``model_input_limit: 1:30:00`` (or a time in a scenario's text) read as a number
    is a surprise no one asked for. ``!!int 1:30`` still reads as one."""
    replaced = {"tag:yaml.org,2002:int": _YAML_INT, "tag:yaml.org,2002:float": _YAML_FLOAT}
    return {
        first: [(tag, replaced.get(tag, regexp)) for tag, regexp in items]
        for first, items in resolvers.items()
    }


class SafeYamlLoader(_BaseLoader):  # type: ignore[misc]
    """A safe YAML loader that measures aliases before constructing anything and refuses an
    integer too long to write out as text; a plain scalar is never read as a base-60 number
    (``1:30:00`` stays text, as in YAML 1.2)."""

    yaml_implicit_resolvers = _without_base_60(_BaseLoader.yaml_implicit_resolvers)

    def construct_yaml_int(self, node: yaml.Node) -> int:
        """An integer, refused with its line when it has more digits than Python converts
        (``int`` would raise a bare ``ValueError`` for a decimal one; a hexadecimal one of that
        size reads, then fails wherever it is written out)."""
        if not isinstance(node, yaml.ScalarNode):
            return int(super().construct_yaml_int(node))  # its own "expected a scalar" error
        limit, text = int_digit_limit(), str(node.value)
        # YAML 1.1's base-60 form (1:30:00) is summed part by part in time quadratic in the
        # parts: one of more parts than its value could have digits is refused before that
        if limit and ":" in text and text.count(":") > limit / _LOG10_OF_60:
            problem = _too_long(limit)
        else:
            try:
                value: int = super().construct_yaml_int(node)
            except (ValueError, IndexError):  # "0b_", "!!int abc", "!!int ''"
                digits = sum(c.isdigit() for c in text)
                problem = (
                    _too_long(limit) if limit and digits > limit else f"not an integer: {text!r}"
                )
            else:
                if not limit or abs(value) < _power_of_ten(limit):  # a hexadecimal one is read
                    return value
                problem = _too_long(limit)
        raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark)

    def get_single_data(self) -> Any:
        """The document's data, after :func:`check_yaml_expansion` accepted its node graph."""
        node = self.get_single_node()
        if node is None:
            return None
        check_yaml_expansion(node)
        return self.construct_document(node)


SafeYamlLoader.add_constructor("tag:yaml.org,2002:int", SafeYamlLoader.construct_yaml_int)


def _too_long(limit: int) -> str:
    return f"an integer of more than {limit:,} digits, more than Python reads"


@functools.lru_cache(maxsize=4)
def _power_of_ten(exponent: int) -> int:
    power: int = 10**exponent  # int ** int is typed Any (a negative exponent gives a float)
    return power


class StrictYamlLoader(SafeYamlLoader):
    """:class:`SafeYamlLoader` that also refuses a mapping with the same key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        """A mapping, refusing a key given twice (YAML would keep the last silently)."""
        seen: dict[Hashable, yaml.Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):
                continue  # the base constructor reports an unhashable key
            if key in seen:
                first = seen[key]
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"duplicate key {key!r} (first at line {first.line + 1}); "
                    "the first value would be lost",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def load_json_strict(text: str, *, read_non_finite: bool = False) -> Any:
    """``json.loads`` that refuses duplicate keys, over-large text and over-deep nesting by name.

    Raises ``json.JSONDecodeError`` for text that is not JSON (an integer too long to read:
    :class:`JsonNumberTooLongError`; NaN or Infinity: :class:`NonFiniteNumberError`, unless
    ``read_non_finite``, which reads them as floats for a caller that judges them),
    :class:`DuplicateKeyError`, :class:`DocumentTooLargeError` and :class:`DocumentTooDeepError`.
    """
    check_input_size(len(text))
    options: dict[str, Any] = {"object_pairs_hook": _unique_pairs}
    if read_non_finite:
        options["parse_constant"] = float
    try:
        return loads_json(text, **options)
    except RecursionError:
        raise DocumentTooDeepError from None


def load_yaml_safe(
    text: str | bytes, loader: type[SafeYamlLoader] = SafeYamlLoader, *, limited: bool = True
) -> Any:
    """One YAML document through ``loader`` (a :class:`SafeYamlLoader` subclass), within limits:
    the input size limit unless ``limited`` is False (the package's own data, which a user's
    lowered ``CTXCONF_MAX_INPUT_BYTES`` is not about), alias and depth limits always.

    Raises ``yaml.YAMLError`` (with ``problem_mark``), :class:`YamlAliasBombError`,
    :class:`DocumentTooLargeError` and :class:`DocumentTooDeepError`."""
    if limited:
        check_input_size(len(text))
    if not issubclass(loader, SafeYamlLoader):  # pragma: no cover - a programming error
        raise TypeError(f"{loader.__name__} is not a SafeYamlLoader")
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader subclass
    except RecursionError:
        raise DocumentTooDeepError from None
    except yaml.YAMLError as exc:
        # libyaml stops at its own depth limit; the pure-Python parser hits RecursionError.
        if "maximum nesting depth" in str(getattr(exc, "problem", "")):
            raise DocumentTooDeepError from None
        raise


def load_yaml_strict(text: str | bytes) -> Any:
    """:func:`load_yaml_safe` that also refuses duplicate keys (:class:`StrictYamlLoader`)."""
    return load_yaml_safe(text, StrictYamlLoader)


_FOLDED_BREAKS: Final = frozenset("\x85\u2028\u2029")


class YamlDumper(yaml.SafeDumper):
    """``SafeDumper`` that double-quotes a string holding a line break only YAML 1.1 knows."""

    def choose_scalar_style(self) -> str:
        """Double quotes (where the character is escaped) for U+0085, U+2028 and U+2029."""
        style: str = super().choose_scalar_style()
        value = getattr(self.event, "value", "")
        if style != '"' and isinstance(value, str) and not _FOLDED_BREAKS.isdisjoint(value):
            return '"'
        return style


def dump_yaml(data: Any, **options: Any) -> str:
    """``yaml.safe_dump`` (Unicode kept readable) whose every string reads back byte-exact."""
    options.setdefault("allow_unicode", True)
    text: str = yaml.dump(data, Dumper=YamlDumper, **options)
    return text
