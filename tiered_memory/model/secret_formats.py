"""Token formats that are secrets on their own, with no label around them. Pure: no I/O.

Each row is a provider whose tokens have a distinctive prefix or shape, as documented by the
providers and catalogued by the public secret scanners (gitleaks, detect-secrets, trufflehog).
The patterns are written here from those formats, not copied. A format shared with ordinary text
(a bare UUID, 32 hex digits, a 40-character base64 run) is not here: `redact` recognises those
only next to a key-like label.

Placeholders that have a real prefix (`AKIAXXXXXXXXXXXXXXXX`, `xoxp-1234567890`,
`ghp_yourTokenHere...`) are left alone: see `placeholder`.
"""

from __future__ import annotations

__all__ = ["PROVIDERS", "Provider", "compiled", "placeholder"]

import functools
import re

# kind, literals (the search is skipped unless one occurs), pattern, group, random_body. The
# pattern is compiled on first use (`compiled`): ~80 patterns cost more to compile than a keyword
# search spends on anything else of its own, and only writes and scans run them.
Provider = tuple[str, tuple[str, ...], str, int, bool]

_T = r"[A-Za-z0-9_\-]"
# Token edges: not inside a longer identifier. (Inside a base64 blob, such as an image in a data:
# URL, every short prefix occurs somewhere, but not followed by a body of the token's alphabet
# and length.)
_L = r"(?<![A-Za-z0-9_])"
_R = r"(?![A-Za-z0-9_])"


def _p(kind: str, literals: str, pattern: str, group: int = 0, random_body: bool = True) -> Provider:
    """A provider row: the search is skipped unless one of the `|`-separated literals occurs."""
    return kind, tuple(literals.split("|")), pattern, group, random_body


@functools.cache
def compiled(pattern: str) -> re.Pattern[str]:
    """A provider row's pattern, compiled once per process."""
    return re.compile(pattern)


def _edged(kind: str, literals: str, body: str, random_body: bool = False) -> Provider:
    """A token with a distinctive prefix, matched whole. `random_body`: also require a random-
    looking value, for prefixes that ordinary words can start with (`sk-learn-estimators`)."""
    return _p(kind, literals, f"{_L}(?:{body}){_R}", 0, random_body)


# Order is priority: a span claimed earlier is not claimed again (`sk-ant-` before `sk-`).
PROVIDERS: list[Provider] = [
    # AI providers
    _p("anthropic-key", "sk-ant-", rf"sk-ant-{_T}{{20,}}"),
    _edged("openai-key", "sk-", rf"sk-(?:proj-|svcacct-|admin-)?{_T}{{20,}}", True),
    _edged("groq-key", "gsk_", r"gsk_[A-Za-z0-9]{48,56}"),
    _edged("xai-key", "xai-", r"xai-[A-Za-z0-9_]{60,90}"),
    _edged("perplexity-key", "pplx-", r"pplx-[A-Za-z0-9]{40,56}"),
    _edged("replicate-token", "r8_", r"r8_[A-Za-z0-9]{35,40}"),
    _edged("huggingface-token", "hf_|api_org_", r"(?:hf|api_org)_[A-Za-z0-9]{30,}"),
    _edged("langsmith-key", "lsv2_", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    # Clouds
    _edged(
        "aws-access-key", "AKIA|ASIA|ABIA|ACCA|A3T", r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}", False
    ),
    _edged("google-api-key", "AIza", r"AIza[0-9A-Za-z_\-]{35}", False),
    _edged("google-oauth-secret", "GOCSPX-", r"GOCSPX-[\w\-]{28}"),
    _edged("google-oauth-token", "ya29.", r"ya29\.[\w\-]{30,}"),
    _p(
        "azure-client-secret",
        "Q~",
        r"(?<![\w~.\-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}(?![\w~\-]|\.[\w~\-])",  # a full stop may follow
    ),
    _p("azure-storage-key", "AccountKey=", r"AccountKey=([A-Za-z0-9+/]{86}==)", 1),
    _p(
        "azure-sas-signature",
        "sig=",
        r"[?&]sig=((?:[A-Za-z0-9+/]|%2[BbFf]){40,60}(?:=|%3[Dd]){0,2})(?![\w%])",
        1,
    ),
    _edged("alibaba-access-key", "LTAI", r"LTAI[A-Za-z0-9]{20}"),
    _edged("digitalocean-token", "_v1_", r"do[por]_v1_[a-f0-9]{64}"),
    _edged("heroku-key", "HRKU-", r"HRKU-[A-Za-z0-9_\-]{40,70}"),
    _edged("flyio-token", "fm1|fm2_|fo1_", r"(?:fm1[ar]_|fm2_)[A-Za-z0-9+/]{100,}={0,3}|fo1_[\w\-]{43}"),
    _edged("cloudflare-origin-key", "v1.0-", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    _edged("terraform-token", "atlasv1", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=\-]{60,70}", True),
    _edged("pulumi-token", "pul-", r"pul-[a-f0-9]{40}"),
    _edged("vault-token", "hvs.|hvb.", r"hv[sb]\.[\w\-]{90,300}"),
    _edged("doppler-token", "dp.", r"dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,44}"),
    _edged("planetscale-token", "pscale_", r"pscale_(?:tkn|pw|oauth)_[\w=.\-]{32,64}"),
    _edged("supabase-key", "sbp_|sb_secret_", r"sbp_[a-f0-9]{40}|sb_secret_[\w\-]{30,}"),
    _edged("databricks-token", "dapi", r"dapi[a-f0-9]{32}(?:-\d)?"),
    _edged("dynatrace-token", "dt0c01.", r"dt0c01\.[A-Z0-9]{24}\.[A-Za-z0-9]{64}"),
    _edged("openshift-token", "sha256~", r"sha256~[\w\-]{43}"),
    _edged("tailscale-key", "tskey-", r"tskey-[a-z]+-[A-Za-z0-9]{8,}-[A-Za-z0-9]{16,}"),
    # Code hosting, CI and packages
    _p("github-token", "ghp_|gho_|ghu_|ghs_|ghr_", r"gh[pousr]_[A-Za-z0-9]{36,255}(?![A-Za-z0-9_])"),
    _p("github-token", "github_pat_", r"github_pat_[A-Za-z0-9_]{22,255}"),
    _edged(
        "gitlab-token",
        "glpat-|glptt-|gldt-|glrt-|glcbt-|glffct-|glft-|glimt-|glagent-|gloas-|glsoat-|GR1348941",
        r"(?:gl(?:pat|ptt|dt|rt|cbt|ffct|ft|imt|agent|oas|soat)-|GR1348941)[\w\-.]{20,}",
    ),
    _edged("atlassian-token", "ATATT3|ATCTT3", r"AT[AC]TT3[A-Za-z0-9_\-=]{150,}"),
    _edged("linear-key", "lin_", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    _edged("sourcegraph-token", "sgp_", r"sgp_(?:[a-f0-9]{16}_|local_)?[a-f0-9]{40}"),
    _edged("npm-token", "npm_", r"npm_[A-Za-z0-9]{36}"),
    _edged("pypi-token", "pypi-AgE", r"pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[\w\-]{50,}"),
    _edged("rubygems-token", "rubygems_", r"rubygems_[a-f0-9]{48}"),
    _edged("clojars-token", "CLOJARS_", r"CLOJARS_[A-Za-z0-9]{60}"),
    _edged("nuget-key", "oy2", r"oy2[a-z0-9]{43}", True),
    _edged("dockerhub-token", "dckr_", r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{27,}"),
    _edged("artifactory-key", "AKCp", r"AKCp[A-Za-z0-9]{69}"),
    _edged("artifactory-token", "cmVmdGtu", r"cmVmdGtu[A-Za-z0-9]{56}"),
    _edged("prefect-key", "pnu_", r"pnu_[A-Za-z0-9]{36}"),
    _edged("readme-key", "rdme_", r"rdme_[a-z0-9]{70}"),
    _edged("scalingo-token", "tk-us-", r"tk-us-[\w\-]{48}"),
    _edged("postman-key", "PMAK-", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}"),
    _edged("infracost-key", "ico-", r"ico-[A-Za-z0-9]{32}", True),
    _p(
        "harness-token",
        "pat.|sat.",
        rf"{_L}(?:pat|sat)\.[\w\-]{{22}}\.[A-Za-z0-9]{{24}}\.[A-Za-z0-9]{{20}}{_R}",
    ),
    # Monitoring
    _edged(
        "grafana-token", "glsa_|glc_", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,3}"
    ),
    _edged("grafana-key", "eyJrIjoi", r"eyJrIjoi[A-Za-z0-9]{70,400}={0,3}"),
    _edged("newrelic-key", "NRAK-|NRJS-|NRII-", r"NRAK-[A-Z0-9]{27}|NRJS-[a-f0-9]{19}|NRII-[\w\-]{32}"),
    _edged("sentry-token", "sntryu_|sntrys_", r"sntryu_[a-f0-9]{64}|sntrys_eyJ[A-Za-z0-9+/=_]{50,}"),
    # Messaging and mail
    # A Slack token's numeric ids (team, user, app) make its shape distinctive whatever their
    # length, so the rest need not look random; without them the prefix alone is too weak.
    _p(
        "slack-token", "xox|xapp-", r"x(?:ox[abposre]|app)-(?P<ids>\d+)-[A-Za-z0-9\-]{10,}", random_body=False
    ),
    _p("slack-token", "xox|xapp-", r"x(?:ox[abposre]|app)-[A-Za-z0-9\-]{10,}"),
    _p("slack-webhook", "hooks.slack.com/", r"hooks\.slack\.com/\w+/([\w/\-]{16,})", 1),
    _p("discord-webhook", "/api/webhooks/", r"discord(?:app)?\.com/api/webhooks/\d+/([\w\-]{60,70})", 1),
    _p("teams-webhook", "webhook.office.com", r"webhook\.office\.com/webhookb2/([\w@\-/]{60,})", 1),
    _edged("discord-bot-token", ".", r"[MNO][A-Za-z0-9_\-]{23,27}\.[\w\-]{6}\.[\w\-]{27,38}", True),
    _p("telegram-bot-token", ":AA", r"(?<![\d:])\d{8,10}:AA[\w\-]{33}(?![\w\-])"),
    _edged("twilio-key", "SK", r"SK[0-9a-fA-F]{32}", True),
    _edged("sendgrid-key", "SG.", r"SG\.[\w\-=]{16,32}\.[\w\-=]{30,50}"),
    _edged("sendinblue-key", "xkeysib-|xsmtpsib-", r"x(?:keysib|smtpsib)-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    _edged("mailchimp-key", "-us", r"[0-9a-f]{32}-us\d{1,2}"),
    _edged("notion-token", "ntn_|secret_", r"ntn_\d{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43}", True),
    # Payments and commerce
    _edged("stripe-key", "sk_|rk_", r"[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,99}"),
    _p("stripe-key", "whsec_", r"whsec_[A-Za-z0-9+/]{24,}"),
    _edged("shopify-token", "shp", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    _edged("square-token", "sq0|EAAA", r"sq0(?:atp|csp)-[\w\-]{22,60}|EAAA[\w\-]{60}"),
    _edged("shippo-token", "shippo_", r"shippo_(?:live|test)_[a-fA-F0-9]{40}"),
    _edged("duffel-token", "duffel_", r"duffel_(?:test|live)_[\w=\-]{43}"),
    _edged("easypost-key", "EZAK|EZTK", r"EZ[AT]K[A-Za-z0-9]{54}"),
    _edged("facebook-token", "EAA", r"EAA[BCM][A-Za-z0-9]{100,}", True),
    _edged("mapbox-secret", "sk.eyJ", r"sk\.eyJ[\w\-]{20,}\.[\w\-]{20,}"),
    # Keys and password managers
    _p(
        "age-secret-key",
        "AGE-SECRET-KEY-1",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        0,
        False,
    ),
    _edged("onepassword-token", "ops_eyJ", r"ops_eyJ[A-Za-z0-9+/]{200,}={0,3}"),
    _edged(
        "onepassword-key",
        "A3-",
        r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
    ),
    # A JWT's header and payload are base64 JSON (`eyJ`); unsigned ones (`alg: none`) end in a dot.
    _p(
        "jwt",
        "eyJ",
        rf"eyJ{_T}{{8,}}\.(?:eyJ{_T}{{8,}}\.(?:{_T}{{8,}})?|{_T}{{8,}}\.{_T}{{8,}})",
        random_body=False,
    ),
    # Only the password: `postgres://app:[REDACTED:url-credentials]@db:5432/x`.
    _p("url-credentials", "://", r"://[^\s:/@?#\"'<>]*:([^\s/@?#\"'<>]+)@(?=[\w\[])", 1, False),
]

_PLACEHOLDER_WORDS = re.compile(
    r"example|sample|your|xxxx|placeholder|dummy|redacted|insert|replace|changeme|here|token|secret",
    re.IGNORECASE,
)
_RUN = re.compile(r"(.)\1{5,}")
_ASCENDING = "0123456789abcdefghijklmnopqrstuvwxyz"


# UUIDs from documentation (RFC 4122's examples, Wikipedia's), pasted as stand-ins for a key.
_DOC_UUIDS = (
    "123e4567e89b12d3a456426614174000",
    "550e8400e29b41d4a716446655440000",
    "f81d4fae7dec11d0a76500a0c91e6bf6",
)


def placeholder(body: str, ids: str | None = None) -> bool:
    """A token-shaped value nobody would issue: a word like "example" or "your" in it, one
    character repeated, a run like `123456` or `abcdef`, or only a handful of distinct characters.
    Real tokens are random: each of these happens by chance well under once in 10,000 tokens.

    `ids`: the numeric id a token carries (a Slack team's). One that is not a run vouches for the
    token, so only words and repeats make it a stand-in, not the look of its random part."""
    if _PLACEHOLDER_WORDS.search(body) or _RUN.search(body):
        return True
    if ids is not None:
        return _has_run(ids)
    low = body.lower()
    if low.replace("-", "") in _DOC_UUIDS:
        return True
    if len(set(low)) <= min(8, max(3, len(low) // 6)):
        return True
    return _has_run(low)


def _has_run(low: str) -> bool:
    """Six characters in a row of `0123456789abc…` or backwards: `123456`, `abcdef`, `fedcba`."""
    return any(_ASCENDING[i : i + 6] in low or _ASCENDING[i : i + 6][::-1] in low for i in range(31))
