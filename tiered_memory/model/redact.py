"""Find and redact secrets in text before it is written to the vault. Pure: no I/O.

A secret committed into a note stays in git history for good, so every write path runs text
through `redact()` first; `tmem scan` reports what is already stored with `find_secrets()`.
False positives mangle notes, so look-alikes (UUIDs, commit hashes, digests, code that reads a
secret from the environment, placeholders) are left alone.

Speed: every pattern starts with a literal so `re` skips ahead fast, and is not run at all when
its literal is absent. Case-insensitive patterns run on an ASCII-lowercased bytes copy whose
offsets match the text (`encode("ascii", "replace")` keeps one byte per character): ~20x faster
than `str.lower()` on non-ASCII text, and `(?i)` would lose the literal prefix.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tiered_memory.model.lazy_re import LazyPattern
from tiered_memory.model.secret_formats import PROVIDERS, compiled, placeholder


@dataclass(frozen=True)
class SecretMatch:
    kind: str  # short slug, e.g. "openai-key", "password", "generic-secret"
    start: int
    end: int  # [start, end) is the replaced span: the secret value only, never its label
    line: int  # 1-based


Span = tuple[int, int, str]


# PEM: the header must end a line (real or JSON-escaped `\n`); a block without END (a truncated
# paste) runs to the first blank line.
_PEM_BEGIN = LazyPattern(r"-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----(?=\s|\\n)")
_PEM_END = LazyPattern(r"-----END [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----")
_PEM_TRUNCATED = LazyPattern(r"[^\r\n]*(?:\r?\n[^\S\r\n]*\S[^\r\n]*){0,400}")

# The rest run on the lowercased bytes. Auth headers first: they are unambiguous.
_AUTH_HEADERS = [
    LazyPattern(
        rb"authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:(?:bearer|basic|token)[ \t]+)?([\w.~+/\-]{8,}=*)"
    ),
    LazyPattern(rb"bearer[ \t]+([\w.~+/\-]{16,}=*)"),
]
# `<key> <separator> <value>`: env files, YAML, JSON, code, CLI flags, "my password is X".
_TAIL = (
    rb"(?![a-z0-9_\-])[\]\"'`*]{0,3}[ \t]*(?P<sep>:=|=>|=(?!=)|:(?!:)|\|(?!\|)|(?:is(?:[ \t]+now)?|was)(?=[ \t]))"
    rb"[ \t]*\**[ \t]*(?:\"(?P<dq>[^\"\r\n]{1,300})\"|'(?P<sq>[^'\r\n]{1,300})'|`(?P<bq>[^`\r\n]{1,300})`"
    rb"|(?P<bare>[^\s\"'`,;&]{1,300}))"
)
_ASSIGNMENTS = [
    (kind, word[:3], LazyPattern(b"(?P<key>" + word + b")" + _TAIL))
    for kind, word in (
        ("password", rb"pass(?:word|wd|phrase|code)?"),
        ("password", rb"pwd"),
        ("generic-secret", rb"secret"),
        ("generic-secret", rb"token"),
        ("generic-secret", rb"credentials?"),
        ("generic-secret", rb"key"),  # only compounds: see _KEY_COMPOUND
    )
]
# A label on one line and its value on the next: Kubernetes and compose env lists
# (`- name: DB_PASSWORD` / `  value: ...`), and `--password VALUE`, `.netrc`'s `password VALUE`.
_NAME_THEN_VALUE = LazyPattern(
    rb"(?:name|key)[ \t]*[:=][ \t]*[\"']?(?P<label>[\w.\-]{3,80})[\"']?,?[ \t]*\r?\n"
    rb"[ \t\-]*\"?value\"?[ \t]*[:=][ \t]*(?:\"(?P<dq>[^\"\r\n]{1,300})\"|'(?P<sq>[^'\r\n]{1,300})'"
    rb"|(?P<bare>[^\s\"',]{1,300}))"
)
_SPACED = LazyPattern(
    rb"(?:(?<![\w\-])--?[\w\-]*?(?P<flag>pass(?:word|wd)?|pwd|token|secret|api[\-_]?key|credentials?)"
    rb"|\blogin[ \t]+\S+[ \t]+(?P<netrc>password))(?![\w\-])[ \t]+(?:\"(?P<dq>[^\"\r\n]{1,300})\""
    rb"|'(?P<sq>[^'\r\n]{1,300})'|(?P<bare>[^\s\"'`]{1,300}))"
)
_KEY_COMPOUND = LazyPattern(
    rb"(?:api|access|secret|private|auth|client|app|master|encryption|signing)[ _.\-]?$"
)
# High-entropy candidates: runs of 20+ base64/token characters that are not hex (digests,
# UUIDs, commit hashes). The cheap length lookahead comes first so short words fail fast.
_C = rb"[a-z0-9+/_\-]"
_CANDIDATE = LazyPattern(rb"(?<!%s)(?=%s{20})(?![0-9a-f\-]+(?!%s))%s{20,}={0,2}(?![=]|%s)" % ((_C,) * 5))
# Words that make a candidate a secret when it follows within a few words. The word must
# end there: "tokens" is a hint, "tokenizer" and "keyboard" are not.
_HINTS = [
    (word[:3], LazyPattern(word + rb"(?![a-z])[^\n]{0,64}?(?P<c>" + _CANDIDATE.pattern + rb")"))
    for word in (rb"keys?", rb"secrets?", rb"tokens?", rb"passw(?:ords?|d)", rb"pwd", rb"credentials?")
    + (rb"bearer", rb"auth(?:enticat(?:e|ion)|ori[sz]ation|ori[sz]e)?")
]
_WORD = LazyPattern(rb"[\w\-]*")
_BASE64_RUN = LazyPattern(r"[A-Za-z0-9+/]{32}")
_AWS_SECRET = LazyPattern(r"[A-Za-z0-9/+]{40}")
_MARKER = LazyPattern(r"\[REDACTED:[a-z0-9-]+\]")
_PERCENT_ESCAPE = LazyPattern(r"%[0-9A-Fa-f]{2}")

# Ids, dates, phone and version numbers. (A UUID is not here: after a key-like label it is the
# key, as Heroku's, HubSpot's and Snyk's are.)
_NOT_SECRET_SHAPE = LazyPattern(r"[\d()+]*(?:[-/.: ][\d()+]+)+")
_REPEATED = LazyPattern(r"(.)\1{5,}")
# UUIDs and hex keys are secrets only right after a key-like phrase in prose ("the Heroku API key
# 0f3c…", "Snyk token: …"); bare, they are ids, commit hashes and digests.
_HEX_KEY = rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32,128}"
_HEX_HINT = LazyPattern(
    rb"(?P<h>(?:[a-z0-9]+[ _\-]?)?(?:api)?keys?|apikey|tokens?|secrets?|passw(?:or)?ds?|credentials?)"
    rb"(?![a-z])[^\n]{0,40}?(?<![0-9a-z\-])(?P<c>" + _HEX_KEY + rb")(?![0-9a-z\-])"
)
# Between the phrase and the value only small words may stand ("the Snyk token is now …"):
# "token refresh fix landed in 3f2a…" names a commit.
_KEY_GAP_WORDS = frozenset(
    b"is was are be the a an my our your this that new old current default api key keys token tokens "
    b"secret secrets value live prod production staging dev test set to now for with use using as "
    b"auth access".split()
)
# "primary key", "commit 3f2a…": words that make the hex an id or a hash, not a key.
_NOT_KEY_WORDS = frozenset(
    b"primary foreign partition sort public publishable idempotency cache row composite unique natural "
    b"surrogate hash lookup map dict object commit commits sha sha1 sha256 md5 hash digest checksum "
    b"revision rev fixed fix fixes landed merged since build id ids uuid request trace etag".split()
)
_DIGIT = LazyPattern(r"[0-9]")
_HEXISH = LazyPattern(r"[0-9a-fA-F\-]+")
_PIECE = LazyPattern(r"[A-Z]{2,}(?![a-z])|[A-Z]+[a-z]+|[A-Z]|[a-z]+|[0-9]+|[^A-Za-z0-9]+")
_CLAUSE_END = LazyPattern(r"[ \t]*(?:[.,;!?)\]}#]|//|\r?\n|\Z)")
_CODE = LazyPattern(
    r"[()\[\]{}]|->|::|^[$%@&*<!|>]"  # calls, subscripts, templates, references, YAML tags
    r"|^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$"  # settings.API_KEY, self.password
    r"|^[a-z]+(?:_[a-z]+)+$|^[A-Z]+(?:_[A-Z]+)+$",  # variable and env var names
)
# An identifier naming a secret rather than being one: `"challengePassword"`, `API_KEY`,
# `"X-Xet-Access-Token"`, `PKCS7PrivateKeyTypes`; weak real passwords like `Password1` excepted.
_NAMES_SECRET = LazyPattern(
    r"(?:^|(?<=[_\-.]))(?i:pass|pwd|secret|token|key|cred)|(?<=[a-z0-9])(?:Pass|Pwd|Secret|Token|Key|Cred)"
)
_IDENT = LazyPattern(r"[A-Za-z_][\w\-.]*")
_WEAK_PASSWORD = LazyPattern(r"[A-Za-z]?[a-z]+[0-9]+")
_SECRET_WORD = LazyPattern(r"pass|pwd|secret|token|key|cred", re.IGNORECASE)
_PLACEHOLDER = LazyPattern(
    r"<.*>|[x*.•#_\-]+|your[-_ ]?.*|(?:.*[-_ ])?here|.*(?:example|placeholder|dummy|redacted).*"
    r"|change[-_ ]?(?:me|it)|replace[-_ ]?me",
    re.IGNORECASE,
)
# Values that are words in prose ("the password is stored in...") or types in code.
_STOP = frozenset(  # shorter words fail the length check anyway
    "none null undefined true false empty unset required optional string bytes bool boolean number "
    "object dict list value values same different below above there incorrect correct wrong invalid "
    "valid expired weak strong missing reset changed stored saved hashed encrypted rotated revoked "
    "leaked compromised needed with from been being also still very only just unknown known okay fine "
    "good long short mandatory blank protected updated sent shown visible sensitive case-sensitive "
    "secure insecure please sufficient enough".split()
)


def _word_start(text: str, i: int) -> bool:
    """Starts a word: `DB_PASSWORD`, `dbPassword`, `-p`, but not `bypass` or `task-`."""
    return i == 0 or not text[i - 1].isalnum() or text[i].isupper() and not text[i - 1].isupper()


def _wordy(v: str) -> bool:
    """Made of words, acronyms and short numbers (`HTTPServer2`, `fix-token-refresh`), not random."""
    pieces = _PIECE.findall(v)
    return not any(p[0].isdigit() and len(p) > 4 or p[0].isalpha() and len(p) < 2 for p in pieces)


def _entropy(v: str) -> float:
    n = len(v)
    return -sum(c / n * math.log2(c / n) for c in Counter(v).values())


def _high_entropy(v: str) -> bool:
    if len(v) < 20 or _HEXISH.fullmatch(v) or v[0] in "/~" or "//" in v:
        return False  # commit hashes, digests, UUIDs, paths
    # str methods instead of per-character loops: this runs for every long word near a hint.
    classes = (v.upper() != v) + (v.lower() != v) + (_DIGIT.search(v) is not None)
    return classes >= 2 and not _wordy(v) and _entropy(v) >= 3.5


def _secret_looking(v: str, password: bool) -> bool:
    """The strict test for values in prose, where an ordinary word is the likelier reading."""
    if v.isdigit():
        return password and len(v) >= 4
    has_alpha = any(c.isalpha() for c in v)
    if has_alpha and any(c.isdigit() for c in v) or any(c in "!@#$%^&*+=?~|\\" for c in v):
        return True
    return has_alpha and not v.islower() and not _wordy(v)


def _value_ok(v: str, quoted: bool, strict: bool, password: bool) -> bool:
    if len(v) < (4 if password else 8) or _PLACEHOLDER.fullmatch(v) or v.lower() in _STOP:
        return False
    if _IDENT.fullmatch(v) and _NAMES_SECRET.search(v) and not _WEAK_PASSWORD.fullmatch(v):
        return False
    if v.startswith(("/", "~/", "./")) or _NOT_SECRET_SHAPE.fullmatch(v):
        return False  # PWD=/tmp, ids, dates, phone and version numbers
    if _REPEATED.search(v) or len(v) >= (16 if password else 10) and placeholder(v):
        return False  # API_KEY=AIzaaaaaaaaa..., TOKEN=PUT_YOUR_TOKEN_HERE
    if quoted and any(c.isspace() for c in v):
        # "Mot de passe", "The password field is required": labels and messages.
        return password and _secret_looking(v, True) and not _wordy(v)
    if not quoted and _CODE.search(v):
        return False
    if strict:
        return _secret_looking(v, password)
    return password or not v.isdigit() and (any(c.isdigit() for c in v) or not _wordy(v))


def _private_keys(text: str) -> list[Span]:
    """Whole PEM blocks. ENDs are found once and looked up per BEGIN, and BEGINs inside a block
    already examined are skipped, so many headers without ENDs stay linear, not quadratic."""
    if "PRIVATE KEY" not in text:
        return []
    ends = [m.span() for m in _PEM_END.finditer(text)]
    end_starts = [start for start, _ in ends]
    begins = list(_PEM_BEGIN.finditer(text))
    found: list[Span] = []
    pos = 0
    for k, m in enumerate(begins):
        if m.start() < pos:
            continue
        i = bisect_left(end_starts, m.end())
        # An END belongs to the nearest BEGIN before it; a block is a few KB, never 64K.
        next_begin = begins[k + 1].start() if k + 1 < len(begins) else len(text)
        if i < len(ends) and ends[i][0] < next_begin and ends[i][0] - m.end() <= 65536:
            pos = ends[i][1]
        else:
            truncated = _PEM_TRUNCATED.match(text, m.end())
            pos = truncated.end() if truncated else m.end()
        if _BASE64_RUN.search(text, m.end(), pos):  # not just the marker strings in code
            found.append((m.start(), pos, "private-key"))
    return found


def _providers(text: str) -> list[list[Span]]:
    """One list of hits per provider row, in priority order."""
    groups: list[list[Span]] = []
    underscore = "_" in text  # one fast single-character scan gates every `xx_` prefix
    for kind, literals, pattern, group, random_body in PROVIDERS:
        if not any(lit in text for lit in literals if underscore or "_" not in lit):
            continue
        groups.append(found := [])
        for m in compiled(pattern).finditer(text):
            s, e = m.span(group)
            value = text[s:e]
            if group == 0 and not _word_start(text, s):
                continue  # `task-...` is not `sk-...`
            if random_body and _wordy(value) and _entropy(value) < 4.2:
                continue  # sk-learn-compatible-estimators (but not sk-Zq8Lx2Vb7Nm4…: wordy-looking, random)
            # The part after the prefix: `123456789:AA…` is a Telegram bot id, not a run.
            at = next((value.find(lit) + len(lit) for lit in literals if lit in value), 0)
            body = value[at:] if len(value) - at >= 16 else value
            if group == 0 and placeholder(body):
                continue  # AKIAXXXXXXXXXXXXXXXX, xoxp-1234567890, ghp_yourTokenGoesHere...
            if kind == "url-credentials" and (
                _PLACEHOLDER.fullmatch(value)
                or value[0] in "${"
                or value[0] == "%"
                and not _PERCENT_ESCAPE.match(value)  # %s, %(password)s
                or value.lower() in _STOP
                or value.isalpha()
                and _SECRET_WORD.search(value)
            ):
                continue  # scheme://user:password@host in documentation
            found.append((s, e, kind))
    return groups


def _auth_headers(text: str, low: bytes) -> list[Span]:
    found: list[Span] = []
    for rx in _AUTH_HEADERS:
        for m in rx.finditer(low):
            value = text[m.start(1) : m.end(1)]
            # Real tokens are random; "Bearer authentication-scheme-v2" in prose is not.
            randomish = not _wordy(value) or _secret_looking(value, False) and _entropy(value) > 4
            if _word_start(text, m.start()) and not _PLACEHOLDER.fullmatch(value) and randomish:
                found.append((m.start(1), m.end(1), "generic-secret"))
    return found


def _assignments(text: str, low: bytes) -> list[Span]:
    found: list[Span] = []
    for kind, literal, rx in _ASSIGNMENTS:
        if literal not in low:
            continue
        for m in rx.finditer(low):
            key_start, key = m.start("key"), m.group("key")
            if key == b"key":
                compound = _KEY_COMPOUND.search(low, max(0, key_start - 11), key_start)
                if compound is None:
                    continue
                key_start = compound.start()
            sep = m.group("sep").decode()
            if not _word_start(text, key_start) or key == b"pass" and sep[0] in "iw":
                continue  # `bypass`; "one pass is enough"
            group = next(g for g in ("dq", "sq", "bq", "bare") if m.group(g) is not None)
            vs, ve = m.span(group)
            bare = group == "bare"
            value = text[vs:ve]
            if bare:  # sentence punctuation in prose, a label's colon, unbalanced closers
                value = value.rstrip(".!?:" if sep[0] in "iw" else ":")
                while value and value[-1] in ")]}>" and "([{<"[")]}>".index(value[-1])] not in value:
                    value = value[:-1]
                ve = vs + len(value)
            if bare and (
                sep == "=" and text[vs - 1] == " " and value.isalpha() or sep == ":" and value.isdigit()
            ):
                continue  # `password = auth` assigns a variable (env files have no spaces); JSON numbers
            # After "is"/"was" a plain word is prose ("the password was wrong"); so is a bare
            # value followed by more words after ":". Those must look like secrets.
            clause_end = _CLAUSE_END.match(text, ve + (not bare)) is not None
            # A table cell (`| DB_PASSWORD | value |`) is as loose as prose.
            strict = bare and (sep[0] in "iw|" or sep == ":" and not clause_end)
            if not _value_ok(value, not bare, strict, kind == "password"):
                continue
            label = low[max(0, key_start - 4) : m.end("key")]
            aws = b"aws" in label or b"access" in label
            found.append((vs, ve, "aws-secret-key" if aws and _AWS_SECRET.fullmatch(value) else kind))
    return found


def _hex_keys(text: str, low: bytes) -> list[Span]:
    found: list[Span] = []
    if (
        b"ke" not in low
        and b"to" not in low
        and b"se" not in low
        and b"pass" not in low
        and b"cred" not in low
    ):
        return found
    for m in _HEX_HINT.finditer(low):
        if not _word_start(text, m.start()):
            continue
        phrase = re.findall(rb"[a-z0-9]+", low[m.start() : m.end("h")])
        gap = re.findall(rb"[a-z0-9]+", low[m.end("h") : m.start("c")])
        if any(w in _NOT_KEY_WORDS for w in phrase) or len(gap) > 5 or not _KEY_GAP_WORDS.issuperset(gap):
            continue
        value = low[m.start("c") : m.end("c")]
        if not (any(c in b"abcdef" for c in value) and any(c in b"0123456789" for c in value)):
            continue
        if placeholder(text[m.start("c") : m.end("c")].replace("-", "")):
            continue
        found.append((m.start("c"), m.end("c"), "generic-secret"))
    return found


def _labelled_elsewhere(text: str, low: bytes) -> list[Span]:
    """Values whose label is not right before them: see `_NAME_THEN_VALUE` and `_SPACED`."""
    found: list[Span] = []
    for rx, literal in ((_NAME_THEN_VALUE, b"value"), (_SPACED, b"-")):
        if literal not in low and not (rx is _SPACED and b"login" in low):
            continue
        for m in rx.finditer(low):
            group = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
            vs, ve = m.span(group)
            value = text[vs:ve]
            if rx is _NAME_THEN_VALUE:
                label = text[m.start("label") : m.end("label")]
                if not _SECRET_WORD.search(label) or label.lower().endswith(
                    ("_id", "-id", "name", "file", "path")
                ):
                    continue
                password = "pass" in label.lower() or "pwd" in label.lower()
            else:
                password = m.group("netrc") is not None or (m.group("flag") or b"").startswith(
                    (b"pass", b"pwd")
                )
            if _value_ok(value, group != "bare", False, password):
                found.append((vs, ve, "password" if password else "generic-secret"))
    return found


def _near_hints(text: str, low: bytes) -> list[Span]:
    found: list[Span] = []
    seen: set[int] = set()  # hint windows overlap; judge each candidate once
    for literal, rx in _HINTS:
        if literal not in low:
            continue
        for m in rx.finditer(low):
            ks = m.start()
            if m.start("c") in seen or not _word_start(text, ks):
                continue  # in dense text many hints share a candidate: cheap exit first
            word = _WORD.match(low, ks)
            kw_end = word.end() if word else ks
            line_end = low.find(b"\n", ks, ks + 200)  # bounded: one huge line must not cost O(n) per hit
            for c in _CANDIDATE.finditer(low, ks, min(len(low), ks + 200) if line_end < 0 else line_end):
                s, e = c.span()
                if s - ks > 100 or len(low[kw_end:s].split()) > 4:
                    break  # "within a few words" of the hint
                if s in seen or s and text[s - 1] == "." or text[e : e + 1] in ("(", "."):
                    continue  # an attribute path or a call in code
                if low.startswith((b"pk_live_", b"pk_test_"), s):
                    continue  # Stripe's publishable keys are public by design
                seen.add(s)
                if _high_entropy(text[s:e].rstrip("=")) and not placeholder(text[s:e]):
                    aws = e - s == 40 and b"aws" in low[low.rfind(b"\n", max(0, ks - 80), ks) + 1 : s]
                    found.append((s, e, "aws-secret-key" if aws else "generic-secret"))
    return found


@lru_cache(maxsize=32)
def _keyword_patterns(keywords: tuple[str, ...]) -> list[tuple[str, re.Pattern[bytes]]]:
    patterns = []
    for kw in (k.strip().lower() for k in keywords if k.strip()):
        # Whole words only where the keyword's edge is a word character. The check before the
        # word is a lookbehind placed after it, so the pattern keeps its fast literal prefix.
        # Non-ASCII characters are "?" in the ASCII copy; their hits are verified on the text.
        esc = re.escape(kw.encode("ascii", "replace"))
        before = rb"(?<!\w%s)" % esc if re.match(r"\w", kw) else b""
        after = rb"(?!\w)" if re.search(r"\w$", kw) else b""
        patterns.append((kw, re.compile(esc + before + after)))
    return patterns


def _spans(text: str, sensitive_keywords: Sequence[str]) -> list[Span]:
    low = text.encode("ascii", "replace").lower()
    groups = [
        _private_keys(text),
        *_providers(text),
        _auth_headers(text, low),
        _assignments(text, low),
        _labelled_elsewhere(text, low),
        _near_hints(text, low),
        _hex_keys(text, low),
    ]
    # A bare str is a Sequence[str] too: treat it as one keyword, not as single letters.
    keywords = (sensitive_keywords,) if isinstance(sensitive_keywords, str) else tuple(sensitive_keywords)
    for kw, rx in _keyword_patterns(keywords):
        spans = (m.span() for m in rx.finditer(low))
        groups.append(
            [(s, e, "sensitive-keyword") for s, e in spans if kw.isascii() or text[s:e].lower() == kw]
        )

    # Earlier groups win overlaps. Existing markers block everything, which makes redaction
    # idempotent: "[REDACTED:password]" is never itself taken for a password.
    accepted: list[Span] = [(m.start(), m.end(), "") for m in _MARKER.finditer(text)]
    for hits in groups:
        accepted = _merge(accepted, hits)
    return [span for span in accepted if span[2]]


def _merge(accepted: list[Span], hits: list[Span]) -> list[Span]:
    """Add the hits that overlap nothing accepted so far; linear, so 100k keyword hits stay cheap."""
    out: list[Span] = []
    i = 0
    for hit in sorted(hits):
        s, e, _ = hit
        while i < len(accepted) and accepted[i][1] <= s:
            out.append(accepted[i])
            i += 1
        if s < e and (i == len(accepted) or accepted[i][0] >= e) and (not out or out[-1][1] <= s):
            out.append(hit)
    return out + accepted[i:]


def find_secrets(text: str, sensitive_keywords: Sequence[str] = ()) -> list[SecretMatch]:
    """Secrets in `text`: non-overlapping, sorted by start, each with its 1-based line."""
    matches = []
    line, pos = 1, 0
    for s, e, kind in _spans(text, sensitive_keywords):
        line += text.count("\n", pos, s)
        pos = s
        matches.append(SecretMatch(kind, s, e, line))
    return matches


def redact(text: str, sensitive_keywords: Sequence[str] = ()) -> tuple[str, list[SecretMatch]]:
    """Replace each secret with `[REDACTED:<kind>]`; return the new text and what was found."""
    matches = find_secrets(text, sensitive_keywords)
    parts = []
    pos = 0
    for m in matches:
        parts += [text[pos : m.start], f"[REDACTED:{m.kind}]"]
        pos = m.end
    parts.append(text[pos:])
    return "".join(parts), matches


def redact_value(value: Any, redact_text: Callable[[str], str], labels: tuple[str, ...] = ()) -> Any:
    """`value` with every string in it (dict keys, list items, nested values) passed through
    `redact_text`. A string is judged together with the keys above it (`password: hunter22` and
    `{"db_password": {"value": "hunter22"}}` are secrets only because of their labels): a
    single-line string goes through as `key=value`, the form env files use, and comes back split."""
    if isinstance(value, str):
        if "\n" not in value:
            for label in labels:
                joined = redact_text(f"{label}={value}")
                if joined.startswith(f"{label}=") and joined != f"{label}={value}":
                    return joined[len(label) + 1 :]
        return redact_text(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            inner = labels[:1]
            if isinstance(key, str) and "=" not in key and "\n" not in key:
                inner = (key, *labels[:1])
            new_key = redact_text(key) if isinstance(key, str) else key
            out[new_key] = redact_value(item, redact_text, inner)
        return out
    if isinstance(value, list | tuple):
        items = [redact_value(item, redact_text, labels) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value
