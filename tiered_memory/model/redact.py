"""Find and redact secrets in text before it is written to the vault. Pure: no I/O.

A secret committed into a note stays in git history for good, so every write path runs text
through `redact()` first; `tmem scan` reports what is already stored with `find_secrets()`.
False positives mangle notes, so look-alikes (UUIDs, commit hashes, digests, code that reads a
secret from the environment, placeholders) are left alone.

Speed: every pattern starts with a literal so `re` skips ahead fast, and is not run at all when
its literal is absent. Case-insensitive patterns run on an ASCII-lowercased bytes copy whose
offsets match the text (`encode("ascii", "replace")` keeps one byte per character): much faster
than `str.lower()` on non-ASCII text, and `(?i)` would lose the literal prefix.
"""

from __future__ import annotations

__all__ = ["SecretMatch", "Span", "find_secrets", "redact", "redact_value"]

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
# `<key> <separator> <value>`: env files, YAML, JSON, code, CLI flags, "my password is X" (and
# "ist", "est", "es" for the labels of other languages). A key's or a secret's `_id` is a secret
# too when its value is shaped like a key (`"private_key_id": "<40 hex>"`, Vault's `secret_id`).
_VERBS = rb"(?:is(?:[ \t]+now)?|was|will[ \t]+be|ist|war|lautet|est|es|era)(?=[ \t])"
_VALUE = (
    rb"[ \t]*\**[ \t]*(?:\"(?P<dq>[^\"\r\n]{1,300})\"|'(?P<sq>[^'\r\n]{1,300})'|`(?P<bq>[^`\r\n]{1,300})`"
    rb"|(?P<bare>[^\s\"'`,;&]{1,300}))"
)
_TAIL = (
    rb"(?P<suffix>[ _\-]?id)?(?![a-z0-9_\-])[\]\"'`*]{0,3}[ \t]*"
    rb"(?P<sep>:=|=>|->|=(?!=)|:(?!:)|\|(?!\|)|(?<=[ \t])(?:--?|\?)(?=[ \t])|" + _VERBS + rb")" + _VALUE
)
_ASSIGNMENTS = [
    (kind, word[:3], LazyPattern(b"(?P<key>" + word + b")" + _TAIL))
    for kind, word in (
        ("password", rb"pass(?:word|wd|phrase|code|wort)?"),
        ("password", rb"pwd"),
        ("password", rb"kennwort"),
        ("password", rb"wachtwoord"),
        ("password", rb"senha"),
        ("password", rb"contrase\?a"),  # contraseña: non-ASCII letters are "?" in the ASCII copy
        ("password", rb"mot de passe"),
        ("generic-secret", rb"secret"),
        ("generic-secret", rb"token"),
        ("generic-secret", rb"credentials?"),
        ("generic-secret", rb"key"),  # only compounds: see _KEY_COMPOUND
    )
]
# A secret introduced by a sentence, its word and its verb apart: "the password for the NAS is
# …", "the AWS secret for the backup bucket is …", "the token we use in CI: …". Only a short
# phrase opened by a preposition or a pronoun may stand between them, so "the password reset
# flow is broken" and "the token budget is 4000" introduce nothing.
_GAP_WORD = rb"[^\s.@;!?\"`:=,()\[\]{}<>|*]{1,40}(?:[.@][a-z0-9][^\s.@;!?\"`:=,()\[\]{}<>|*]{0,39}){0,4}"
_INTRO_TAIL = (
    rb"(?![a-z0-9_\-])(?:(?P<gap>[ \t]+(?:for|of|to|on|at|in|into|from|with|we|i|you|they|he|she|that"
    rb"|which|used|needed|here|there)(?![\w'\-])(?:[ \t]+" + _GAP_WORD + rb"){0,5}?)[ \t]*"
    rb"(?P<sep>:(?!:)|(?:(?:is|are)(?:[ \t]+(?:now|still))?|was|were|will[ \t]+be)(?=[ \t]))"
    rb"|[ \t]+(?P<to>to)(?=[ \t]))" + _VALUE  # "changed the password to …"
)
_SETS = LazyPattern(
    rb"\b(?:set|sets|setting|changed?|changes|changing|reset|resets|resetting|updated?|updates"
    rb"|updating|rotated?|rotates|rotating)\b"
)
# Password words take any value that looks like a password; the others a key-shaped one.
_INTRODUCED = [
    (kind, word[:3], LazyPattern(b"(?P<key>" + word + b")" + _INTRO_TAIL))
    for kind, word in (
        ("password", rb"pass(?:word|wd|phrase|code)s?"),
        ("password", rb"pwd"),
        ("password", rb"credentials?"),
        ("generic-secret", rb"secrets?"),
        ("generic-secret", rb"tokens?"),
        ("generic-secret", rb"keys?"),
    )
]
# The value first, the word after it: "use … as the password", "… is my API key". The word must
# end its phrase ("… is the key type" names a type): only these may follow it.
_VALUE_FIRST = LazyPattern(
    rb"(?<=[ \t])(?:is|was|as)[ \t]+(?:the|my|our|your|their|his|her)"
    rb"(?P<mid>(?:[ \t]+[a-z0-9'\-]{1,20}){0,3}?)"
    rb"[ \t]+(?P<key>passw(?:ords?|d)|pass(?:phrase|code)s?|pwd|tokens?|secrets?|keys?|credentials?)"
    rb"(?![a-z0-9_\-])(?=[ \t]*(?:[.,;:!?)\]\"'`]|\r?\n|$"
    rb"|(?:for|of|to|on|at|in|from|with|and|or|but|that|which|we|i|you|here|there|now|today|yesterday"
    rb"|again|too|so|then|please)(?![a-z0-9_\-])))"
)
# Words in the phrase that make the value an id, a digest or a rule, not the secret itself.
_NOT_SECRET_GAP = frozenset(
    b"hash hashes hashed hashing digest checksum sha sha1 sha256 sha512 md5 fingerprint commit commits "
    b"revision rev id ids uuid length size count policy hint format type field column prompt name names "
    b"example sample placeholder expiry expiration lifetime ttl version".split()
)
# The same in other scripts, where words are not set apart by spaces: "NAS的密码是…", "密码：…",
# "パスワードは…", "비밀번호는 …", "пароль от роутера: …". The value is what follows in ASCII.
_INTL_PASSWORD = ("密码", "密碼", "口令", "パスワード", "暗証番号", "비밀번호", "пароль")
_INTL_SECRET = ("密钥", "密鑰", "秘钥", "秘鑰", "私钥", "私鑰", "令牌", "秘密鍵", "トークン", "토큰")
_INTL = LazyPattern(
    "(?P<key>" + "|".join(_INTL_PASSWORD + _INTL_SECRET) + ")"
    r"[^\n。！？；.!?;]{0,20}?(?:是|为|為|は|는|은|:|：|=|＝)[ \t\u3000]*"
    r"(?:[\"'“「`『](?P<q>[^\"'”」`』\r\n]{1,300})[\"'”」`』]|(?P<bare>[!-~]{1,300}))",
    re.IGNORECASE,
)
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
# "public key", "primary key", "cache key": names of things that are not secrets.
_NOT_SECRET_COMPOUND = LazyPattern(
    rb"(?<![a-z])(?:public|publishable|primary|foreign|partition|sort|cache|composite|unique|natural"
    rb"|surrogate|idempotency|lookup)[ _.\-]?$"
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
_VOWEL = LazyPattern(r"[aeiouyAEIOUY]")
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
# A passphrase of three or more words joined by hyphens: `correct-horse-battery-staple`. Words of
# one or two letters are left out, so "end-to-end" and "state-of-the-art" stay prose.
_PASSPHRASE = LazyPattern(r"[A-Za-z0-9]{3,}(?:-[A-Za-z0-9]{3,}){2,}")
_HEX_KEY_TEXT = LazyPattern(_HEX_KEY.decode(), re.IGNORECASE)
_TOKEN_CHARS = LazyPattern(r"[\w+/=.~:\-]+")
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
    "secure insecure please sufficient enough 1password".split()
)


def _word_start(text: str, i: int) -> bool:
    """Starts a word: `DB_PASSWORD`, `dbPassword`, `-p`, but not `bypass` or `task-`."""
    return i == 0 or not text[i - 1].isalnum() or text[i].isupper() and not text[i - 1].isupper()


def _wordy(v: str) -> bool:
    """Made of words, acronyms and short numbers (`HTTPServer2`, `fix-token-refresh`), not random."""
    pieces = _PIECE.findall(v)
    return not any(p[0].isdigit() and len(p) > 4 or p[0].isalpha() and len(p) < 2 for p in pieces)


def _unspeakable(v: str) -> bool:
    """Random, though `_wordy` takes its short pieces for words and numbers (`kn02APt1CB23MKx…`):
    pieces no word is made of (runs of consonants, a long one counting twice, and groups of
    digits between them), and little of it in pieces long enough to be words. Identifiers have
    abbreviations (`ptr`, `ctx`) but mostly words: `xsltTransformContextPtr`, and lower-case
    names are joined with separators: `gnutls_pkcs11_obj_get_ptr`."""
    if v.islower() and v.count("_") + v.count("-") >= 2:
        return False
    consonants = digits = in_words = 0
    for p in _PIECE.findall(v):
        if p.isdigit():
            digits += 1
        elif p.isalpha() and len(p) > 1 and not p.isupper() and not _VOWEL.search(p):
            consonants += 1 + (len(p) >= 5)
        elif p.isalpha() and len(p) >= 4:
            in_words += len(p)
    return (consonants >= 2 or consonants + digits >= 4) and in_words < len(v) / 4


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
    if password and len(v) >= 12 and _PASSPHRASE.fullmatch(v):
        return True
    has_alpha = any(c.isalpha() for c in v)
    if has_alpha and any(c.isdigit() for c in v) or any(c in "!@#$%^&*+=?~|\\" for c in v):
        return True
    return has_alpha and not v.islower() and not _wordy(v)


def _token_like(v: str) -> bool:
    """Shaped like a generated key or token, not like a word, a name or an id: a UUID or 32+ hex
    digits with both letters and digits, a high-entropy run, or 12+ characters of mixed classes
    that do not read as words."""
    if _HEX_KEY_TEXT.fullmatch(v):
        hex_digits = v.replace("-", "")
        return not hex_digits.isdigit() and not hex_digits.isalpha() and not placeholder(hex_digits)
    if _HEXISH.fullmatch(v) or not _TOKEN_CHARS.fullmatch(v):
        return False  # short hex (a commit, a GPG key id); markup, escapes, code
    body = v.rstrip("=")
    classes = (body.upper() != body) + (body.lower() != body) + (_DIGIT.search(body) is not None)
    if len(body) < 12 or classes < 2 or placeholder(body):
        return False
    if len(body) >= 20 and _high_entropy(body):
        return True
    return (not _wordy(body) or _unspeakable(body)) and _entropy(body) >= (3.5 if len(body) >= 20 else 3.0)


def _random_base64(v: str) -> bool:
    """An AWS secret key that happens to start with `/`: 40 base64 characters, far more varied
    than a path of the same length (whose words repeat letters)."""
    return _AWS_SECRET.fullmatch(v) is not None and _entropy(v) >= 4.4


def _value_ok(v: str, quoted: bool, strict: bool, password: bool) -> bool:
    if len(v) < (4 if password else 8) or _PLACEHOLDER.fullmatch(v) or v.lower() in _STOP:
        return False
    if _IDENT.fullmatch(v) and _NAMES_SECRET.search(v) and not _WEAK_PASSWORD.fullmatch(v):
        return False
    if v.startswith(("/", "~/", "./")) and not _random_base64(v) or _NOT_SECRET_SHAPE.fullmatch(v):
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
            ids = m.group("ids") if "ids" in m.re.groupindex else None
            if group == 0 and placeholder(body, ids):
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


def _names_no_secret(low: bytes, i: int) -> bool:
    """The word at `i` ends a name of something not secret: "public key", "primary key"."""
    return _NOT_SECRET_COMPOUND.search(low, max(0, i - 13), i) is not None


def _value_at(text: str, m: re.Match[bytes], prose: bool) -> tuple[int, int, str, bool]:
    """The value a label pattern matched: (start, end, value, bare). A bare value loses sentence
    punctuation after a verb, a label's colon and unbalanced closers."""
    group = next(g for g in ("dq", "sq", "bq", "bare") if m.group(g) is not None)
    vs, ve = m.span(group)
    value = text[vs:ve]
    bare = group == "bare"
    if bare:
        while True:
            before = value
            value = value.rstrip(".!?:" if prose else ":")
            if value and value[-1] in ")]}>" and "([{<"[")]}>".index(value[-1])] not in value:
                value = value[:-1]
            if value == before:
                break
        ve = vs + len(value)
    return vs, ve, value, bare


def _with_trailing_marks(text: str, ve: int) -> int:
    """A password in prose ends where its trailing `!` or `?` does: either may be the sentence's
    or the password's last character, and one mark redacted too many costs less than one leaked."""
    while ve < len(text) and text[ve] in "!?":
        ve += 1
    return ve


def _secret_kind(low: bytes, label_start: int, label_end: int, value: str, kind: str) -> str:
    """`aws-secret-key` for a 40-character AWS secret named as such; else `kind`."""
    label = low[max(0, label_start - 4) : label_end]
    aws = b"aws" in label or b"access" in label
    return "aws-secret-key" if aws and _AWS_SECRET.fullmatch(value) else kind


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
            if sep == "?" and text[m.start("sep")] not in "—–":
                continue  # only a dash is "?" in the ASCII copy: "password — …"; not a question
            # Prose: "the password is …", "password -> …", "wifi password — …".
            verb = sep[0].isalpha() or sep[0] in "-?"
            if not _word_start(text, key_start) or key == b"pass" and verb:
                continue  # `bypass`; "one pass is enough"
            suffix = m.group("suffix")
            if suffix is not None and (
                key not in (b"key", b"secret") or suffix[:1] not in b"_- " and text[m.start("suffix")] != "I"
            ):
                continue  # `token_id`, `credential_id` name public ids; `keyid` is no camelCase `KeyId`
            vs, ve, value, bare = _value_at(text, m, verb)
            if bare and (
                sep == "=" and text[vs - 1] == " " and value.isalpha() or sep == ":" and value.isdigit()
            ):
                continue  # `password = auth` assigns a variable (env files have no spaces); JSON numbers
            # After "is"/"was" a plain word is prose ("the password was wrong"); so is a bare
            # value followed by more words after ":". Those must look like secrets.
            clause_end = _CLAUSE_END.match(text, ve + (not bare)) is not None
            # A table cell (`| DB_PASSWORD | value |`) is as loose as prose.
            strict = bare and (verb or sep == "|" or sep == ":" and not clause_end)
            if not _value_ok(value, not bare, strict, kind == "password"):
                continue
            if suffix is not None and not _token_like(value):
                continue  # `token_id: 42`, `secret_id: my-role`: ids
            if kind == "password" and bare and verb:
                ve = _with_trailing_marks(text, ve)
            found.append((vs, ve, _secret_kind(low, key_start, m.end("key"), value, kind)))
    return found


def _introduced(text: str, low: bytes) -> list[Span]:
    """Secrets a sentence introduces with a phrase between the word and the verb: `_INTRODUCED`."""
    found: list[Span] = []
    for kind, literal, rx in _INTRODUCED:
        if literal not in low:
            continue
        for m in rx.finditer(low):
            key_start = m.start("key")
            if not _word_start(text, key_start) or _names_no_secret(low, key_start):
                continue
            if _NOT_SECRET_GAP.intersection(re.findall(rb"[a-z0-9]+", m.group("gap") or b"")):
                continue  # "the key of the commit is …", "the token for the request id is …"
            if m.group("to") and not _SETS.search(low, max(0, key_start - 40), key_start):
                continue  # "convert the password to UTF8": only setting it says what it is
            vs, ve, value, bare = _value_at(text, m, True)
            password = kind == "password"
            if not _value_ok(value, not bare, bare, password) or not password and not _token_like(value):
                continue
            if password and bare:
                ve = _with_trailing_marks(text, ve)
            label_end = m.end("gap") if m.group("gap") else m.end("key")
            found.append((vs, ve, _secret_kind(low, max(0, key_start - 20), label_end, value, kind)))
    return found


def _named_after(text: str, low: bytes) -> list[Span]:
    """Values named by the words after them: `_VALUE_FIRST`."""
    found: list[Span] = []
    if b" as " not in low and b" is " not in low and b" was " not in low:
        return found
    for m in _VALUE_FIRST.finditer(low):
        key_start = m.start("key")
        if _names_no_secret(low, key_start) or _NOT_SECRET_GAP.intersection(
            re.findall(rb"[a-z0-9]+", m.group("mid"))
        ):
            continue
        ve = m.start()  # the value is the word before the verb, of at most 300 characters
        while ve > 0 and text[ve - 1] in " \t":
            ve -= 1
        vs = ve
        while vs > max(0, ve - 300) and not text[vs - 1].isspace():
            vs -= 1
        if vs == ve or vs > 0 and not text[vs - 1].isspace():
            continue
        quoted = ve - vs >= 2 and text[vs] in "\"'`" and text[ve - 1] == text[vs]
        if quoted:
            vs, ve = vs + 1, ve - 1
        else:
            while vs < ve and text[vs] in "([{":
                vs += 1
            while ve > vs and text[ve - 1] in ",;:)]}":
                ve -= 1
        value = text[vs:ve]
        password = m.group("key").startswith((b"pass", b"pwd", b"cred"))
        # Strict even when quoted: quotes in prose mark code as often as values ("use `getpass()`").
        if not _value_ok(value, False, True, password) or not password and not _token_like(value):
            continue
        kind = _secret_kind(low, m.start(), m.end("key"), value, "password" if password else "generic-secret")
        found.append((vs, ve, kind))
    return found


def _introduced_elsewhere(text: str) -> list[Span]:
    """Passwords and keys introduced in scripts without spaces between words: `_INTL`."""
    if text.isascii():
        return []
    found: list[Span] = []
    for m in _INTL.finditer(text):
        group = "q" if m.group("q") is not None else "bare"
        vs, ve = m.span(group)
        value = text[vs:ve]
        if group == "bare":
            value = value.rstrip(".,;:)]}>")
            ve = vs + len(value)
        password = m.group("key").lower() in _INTL_PASSWORD
        if not _value_ok(value, group == "q", group == "bare", password):
            continue
        if not password and not _token_like(value):
            continue
        found.append((vs, ve, "password" if password else "generic-secret"))
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
            if _names_no_secret(low, ks):
                continue
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
        _introduced(text, low),
        _introduced_elsewhere(text),
        _named_after(text, low),
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
