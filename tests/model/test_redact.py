"""Tests for tiered_memory.model.redact.

Every fake secret is assembled at run time (prefix + seeded random body), so this file holds
nothing that a secret scanner would flag.
"""

from __future__ import annotations

import base64
import json
import random
import string
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_memory.model.redact import SecretMatch, find_secrets, redact

ALNUM = string.ascii_letters + string.digits


def rand(n: int, seed: int, alphabet: str = ALNUM) -> str:
    return "".join(random.Random(seed).choices(alphabet, k=n))


def b64url(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def fake_jwt() -> str:
    return (
        b64url({"alg": "HS256", "typ": "JWT"}) + "." + b64url({"sub": "1234", "n": "x"}) + "." + rand(43, 9)
    )


def pem(label: str, lines: int = 6) -> str:
    body = "\n".join(rand(64, 100 + i, ALNUM + "+/") for i in range(lines))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


# (kind, secret). Each is checked inside a sentence: "... <secret> ..." -> "... [REDACTED:kind] ...".
PROVIDER_SECRETS = [
    ("openai-key", "sk-" + rand(48, 1)),
    ("openai-key", "sk-" + "proj-" + rand(74, 2, ALNUM + "_-") + "T3BlbkFJ" + rand(74, 3)),
    ("anthropic-key", "sk-" + "ant-" + "api03-" + rand(93, 4, ALNUM + "_-") + "AA"),
    ("aws-access-key", "AKIA" + rand(16, 5, string.ascii_uppercase + "234567")),
    ("aws-access-key", "ASIA" + rand(16, 6, string.ascii_uppercase + "234567")),
    ("github-token", "ghp_" + rand(36, 7)),
    ("github-token", "gho_" + rand(36, 8)),
    ("github-token", "ghu_" + rand(36, 10)),
    ("github-token", "ghs_" + rand(36, 11)),
    ("github-token", "ghr_" + rand(36, 12)),
    ("github-token", "github_pat_" + rand(22, 13) + "_" + rand(59, 14)),
    ("gitlab-token", "glpat-" + rand(20, 15, ALNUM + "_-")),
    (
        "slack-token",
        "xoxb-" + rand(12, 16, string.digits) + "-" + rand(13, 17, string.digits) + "-" + rand(24, 18),
    ),
    (
        "slack-token",
        "xoxp-" + rand(12, 19, string.digits) + "-" + rand(12, 20, string.digits) + "-" + rand(32, 21),
    ),
    ("slack-token", "xoxa-" + "2-" + rand(12, 22, string.digits) + "-" + rand(32, 23)),
    ("stripe-key", "sk_" + "live_" + rand(24, 24)),
    ("stripe-key", "rk_" + "live_" + rand(24, 25)),
    ("stripe-key", "sk_" + "test_" + rand(24, 26)),
    ("google-api-key", "AIza" + rand(35, 27, ALNUM + "_-")),
    ("huggingface-token", "hf_" + rand(34, 28, string.ascii_letters)),
    ("npm-token", "npm_" + rand(36, 29)),
    ("jwt", fake_jwt()),
]


@pytest.mark.parametrize(
    ("kind", "secret"), PROVIDER_SECRETS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(PROVIDER_SECRETS)]
)
def test_provider_secret_is_redacted_and_context_kept(kind: str, secret: str) -> None:
    text = f"Deploy notes:\nuse {secret} for the staging deploy, then rotate.\n"
    out, found = redact(text)
    assert out == f"Deploy notes:\nuse [REDACTED:{kind}] for the staging deploy, then rotate.\n"
    assert found == [SecretMatch(kind, text.index(secret), text.index(secret) + len(secret), 2)]


@pytest.mark.parametrize(("kind", "secret"), PROVIDER_SECRETS[:6])
def test_provider_secret_in_quotes_and_assignments(kind: str, secret: str) -> None:
    for text in (f'export KEY="{secret}"', f"key: '{secret}'", f'{{"token": "{secret}"}}', f"(`{secret}`)"):
        out, found = redact(text)
        assert out == text.replace(secret, f"[REDACTED:{kind}]")
        assert [m.kind for m in found] == [kind]


def test_slack_webhook_keeps_host() -> None:
    path = (
        "T"
        + rand(8, 30, string.ascii_uppercase)
        + "/B"
        + rand(8, 31, string.ascii_uppercase)
        + "/"
        + rand(24, 32)
    )
    out, found = redact(f"alerts go to https://hooks.slack.com/services/{path} daily")
    assert out == "alerts go to https://hooks.slack.com/services/[REDACTED:slack-webhook] daily"
    assert [m.kind for m in found] == ["slack-webhook"]


def test_aws_secret_key_next_to_its_label() -> None:
    secret = rand(40, 33, ALNUM + "/+")
    for text in (
        f"aws_secret_access_key = {secret}",
        f"AWS_SECRET_ACCESS_KEY={secret}",
        f'"SecretAccessKey": "{secret}"',
        f"the aws secret key {secret} was rotated",
    ):
        out, found = redact(text)
        assert out == text.replace(secret, "[REDACTED:aws-secret-key]"), text
        assert [m.kind for m in found] == ["aws-secret-key"]


@pytest.mark.parametrize(
    "label",
    ["RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "PRIVATE KEY", "ENCRYPTED PRIVATE KEY"],
)
def test_pem_block_is_redacted_whole(label: str) -> None:
    block = pem(label)
    text = f"# Server setup\n\nThe deploy key:\n\n{block}\n\nKeep it out of git.\n"
    out, found = redact(text)
    assert out == "# Server setup\n\nThe deploy key:\n\n[REDACTED:private-key]\n\nKeep it out of git.\n"
    assert found == [SecretMatch("private-key", text.index("-----BEGIN"), text.index(block) + len(block), 5)]


def test_pgp_private_key_block() -> None:
    body = "\n".join(rand(64, 200 + i, ALNUM + "+/") for i in range(8))
    block = f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----"
    out, _ = redact(f"key:\n{block}\nend")
    assert out == "key:\n[REDACTED:private-key]\nend"


def test_pem_escaped_in_json_and_truncated() -> None:
    block = pem("PRIVATE KEY").replace("\n", "\\n")
    out, found = redact(f'{{"type": "service_account", "private_key": "{block}\\n", "id": 1}}')
    assert out == '{"type": "service_account", "private_key": "[REDACTED:private-key]\\n", "id": 1}'
    truncated = pem("RSA PRIVATE KEY").rsplit("\n", 2)[0]  # pasted without its last lines
    out, found = redact(f"pasted:\n{truncated}\n\nafter the blank line")
    assert out == "pasted:\n[REDACTED:private-key]\n\nafter the blank line"


def test_public_keys_and_pem_markers_in_code_are_kept() -> None:
    public = pem("PUBLIC KEY")
    assert redact(public)[0] == public
    code = '_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"\n_END = b"-----END OPENSSH PRIVATE KEY-----"\n'
    assert redact(code)[0] == code


def test_url_credentials_keep_user_and_host() -> None:
    pw = rand(16, 34)
    out, found = redact(f"DATABASE_URL=postgres://app:{pw}@db:5432/x and redis://:{pw}@cache:6379/0")
    assert out == (
        "DATABASE_URL=postgres://app:[REDACTED:url-credentials]@db:5432/x"
        " and redis://:[REDACTED:url-credentials]@cache:6379/0"
    )
    assert [m.kind for m in found] == ["url-credentials", "url-credentials"]
    assert redact("git clone https://bob:hunter2xyz@github.com/o/r.git")[0] == (
        "git clone https://bob:[REDACTED:url-credentials]@github.com/o/r.git"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("password = hunter2xyz", "password = [REDACTED:password]"),
        ('PASSWORD: "Tr0ub4dor&3"', 'PASSWORD: "[REDACTED:password]"'),
        ("passwd=s3cr3tpass", "passwd=[REDACTED:password]"),
        ("pwd: hunter2", "pwd: [REDACTED:password]"),
        ("DB_PASSWORD=pa55word!", "DB_PASSWORD=[REDACTED:password]"),
        ('{"user": "bob", "password": "hunter2xyz"}', '{"user": "bob", "password": "[REDACTED:password]"}'),
        ("  password: swordfish\n  user: bob", "  password: [REDACTED:password]\n  user: bob"),
        ("dbPassword: 'Xk9#mQ2!'", "dbPassword: '[REDACTED:password]'"),
        ("mysql --password=swordfish -u root", "mysql --password=[REDACTED:password] -u root"),
        ("- **Password**: hunter2", "- **Password**: [REDACTED:password]"),
        (
            "conn = connect(user='bob', password='hunter2xyz')",
            "conn = connect(user='bob', password='[REDACTED:password]')",
        ),
        ("My password is hunter2, don't tell.", "My password is [REDACTED:password], don't tell."),
        ('the password is "swordfish".', 'the password is "[REDACTED:password]".'),
        ("The wifi password is Xk9mQ2pR now", "The wifi password is [REDACTED:password] now"),
        ("api_key=Zx81kdLq0PmnB", "api_key=[REDACTED:generic-secret]"),
        ("X-Api-Key: 8f4Kd02LmQz9x", "X-Api-Key: [REDACTED:generic-secret]"),
        ("secret: q8Lm2Xz9", "secret: [REDACTED:generic-secret]"),
        ("token = 'abcd1234efgh5678'", "token = '[REDACTED:generic-secret]'"),
        ('client_secret: "9f8e7d6c5b4a"', 'client_secret: "[REDACTED:generic-secret]"'),
        ("SECRET_KEY = 'django-insecure-x7$k2'", "SECRET_KEY = '[REDACTED:generic-secret]'"),
        (
            "GET /cb?access_token=AbC123xyz789&state=1",
            "GET /cb?access_token=[REDACTED:generic-secret]&state=1",
        ),
        ("private_key: Xk9mQ2pR7sT4vW8y", "private_key: [REDACTED:generic-secret]"),
        ("password = changeme1", "password = [REDACTED:password]"),
    ],
)
def test_assignments_and_phrases(text: str, expected: str) -> None:
    assert redact(text)[0] == expected


def test_high_entropy_next_to_hint_words() -> None:
    tok = rand(32, 35)
    cases = {
        f"Authorization: Bearer {tok}": "Authorization: Bearer [REDACTED:generic-secret]",
        f"curl -H 'Authorization: Basic {base64.b64encode(b'bob:hunter2xyz').decode()}' x": (
            "curl -H 'Authorization: Basic [REDACTED:generic-secret]' x"
        ),
        f"the deploy token {tok} expires Friday": "the deploy token [REDACTED:generic-secret] expires Friday",
        f"SECRET_KEY_BASE={tok}": "SECRET_KEY_BASE=[REDACTED:generic-secret]",
        f"API key for staging: {tok}": "API key for staging: [REDACTED:generic-secret]",
        f"credentials {rand(24, 36, string.ascii_letters)} (letters only, mixed case)": (
            "credentials [REDACTED:generic-secret] (letters only, mixed case)"
        ),
    }
    for text, expected in cases.items():
        out, found = redact(text)
        assert out == expected, text
        assert [m.kind for m in found] == ["generic-secret"]
    # the same string with no hint word nearby is not a secret by itself
    assert redact(f"random id {tok} in a log line")[0] == f"random id {tok} in a log line"


LOWER_DIGITS = string.ascii_lowercase + string.digits
WORDS_AND_DIGITS = "Harbor" + rand(4, 60, string.digits) + "#"
PASSPHRASE = "-".join(["correct", "horse", "battery", "staple"])


@pytest.mark.parametrize(
    ("template", "secret", "kind"),
    [
        (
            "The AWS secret for the backup bucket is {s}, keep it safe.",
            rand(40, 61, ALNUM + "+/"),
            "aws-secret-key",
        ),
        ("My password for the NAS is {s}", PASSPHRASE + "!", "password"),
        ("My password for the NAS is {s}.", PASSPHRASE, "password"),
        ("the passphrase is {s} (four words)", PASSPHRASE, "password"),
        ("The password I set on the router was {s} yesterday.", WORDS_AND_DIGITS, "password"),
        ("Password for the staging box: {s}", WORDS_AND_DIGITS, "password"),
        ("the credentials for the admin account are {s}", WORDS_AND_DIGITS, "password"),
        ("The API token we use in CI is {s}", rand(16, 62), "generic-secret"),
        ("the API key for Datadog is {s}.", rand(32, 63, "0123456789abcdef"), "generic-secret"),
        ("the key to the backup bucket is {s}", rand(28, 64, ALNUM + "+/"), "generic-secret"),
        ("Use {s} as the password for the NAS.", WORDS_AND_DIGITS, "password"),
        ("{s} is my API key", rand(32, 70), "generic-secret"),
        ("{s} is the AWS secret key for prod", rand(40, 71, ALNUM + "+/"), "aws-secret-key"),
        ("I changed the password to {s} yesterday.", WORDS_AND_DIGITS, "password"),
        ("the new password will be {s}", WORDS_AND_DIGITS, "password"),
        ("Password -> {s}", WORDS_AND_DIGITS, "password"),
        ("Wi-Fi password — {s}", WORDS_AND_DIGITS, "password"),
        ("- guest wifi password - {s}", WORDS_AND_DIGITS, "password"),
        ("the password for bob@acme.org is {s}", WORDS_AND_DIGITS, "password"),
        ("Store this private key id: {s}", rand(40, 72, "0123456789abcdef"), "generic-secret"),
        ("我的NAS密码是{s}，别告诉别人。", WORDS_AND_DIGITS, "password"),
        ("服务器的密钥：{s}", rand(32, 65), "generic-secret"),
        ("パスワードは {s} です", WORDS_AND_DIGITS, "password"),
        ("비밀번호는 {s} 입니다", WORDS_AND_DIGITS, "password"),
        ("Пароль от роутера: {s}", WORDS_AND_DIGITS, "password"),
        ("Das Passwort ist {s}.", WORDS_AND_DIGITS, "password"),
        ("La contraseña es {s}.", WORDS_AND_DIGITS, "password"),
    ],
)
def test_a_secret_introduced_by_a_sentence_is_redacted(template: str, secret: str, kind: str) -> None:
    # The rule a reader applies: a token that looks secret, introduced by a word such as
    # password, secret, token, key or credentials, is a secret whatever its format or label.
    text = template.format(s=secret)
    out, found = redact(text)
    assert out == template.format(s=f"[REDACTED:{kind}]")
    assert [m.kind for m in found] == [kind]
    assert find_secrets(text) == found  # `tmem scan` reports what `redact` replaces


def test_service_account_json_keeps_its_ids_and_loses_its_keys() -> None:
    key_id = rand(40, 66, "0123456789abcdef")
    block = pem("PRIVATE KEY").replace("\n", "\\n")
    account = {
        "type": "service_account",
        "project_id": "acme-prod",
        "private_key_id": key_id,
        "private_key": "@@PEM@@",
        "client_email": "ci@acme-prod.iam.gserviceaccount.com",
        "client_id": rand(21, 67, string.digits),
    }
    text = json.dumps(account, indent=2).replace("@@PEM@@", block)
    out, found = redact(text)
    assert key_id not in out and "BEGIN PRIVATE KEY" not in out
    assert [m.kind for m in found] == ["generic-secret", "private-key"]
    assert account["client_id"] in out and '"project_id": "acme-prod"' in out
    camel = f'{{"privateKeyId": "{key_id}", "keyId": "{key_id}", "key_id": "{key_id}"}}'
    assert redact(camel)[0] == camel.replace(key_id, "[REDACTED:generic-secret]", 1)


def test_slack_tokens_with_short_numeric_parts_are_redacted() -> None:
    # The ids' length does not matter; a body of lowercase letters and digits often reads as
    # short words and numbers, which is why the ids, not the body, must make the shape.
    for seed in range(400):
        rng = random.Random(seed)
        team, user = rng.randrange(100, 10_000), rng.randrange(100, 10_000)
        tok = f"xoxb-{team}-{user}-" + "".join(rng.choices(LOWER_DIGITS, k=24))
        assert redact(f"posted with {tok} today") == (
            "posted with [REDACTED:slack-token] today",
            [SecretMatch("slack-token", 12, 12 + len(tok), 1)],
        ), tok
    for tok in ("xo" + "xp-2-3-4-" + rand(32, 68, LOWER_DIGITS), "xa" + "pp-1-A0123-2048-" + rand(24, 69)):
        assert redact(f"use {tok}")[0] == "use [REDACTED:slack-token]"
    # Ids that are no run vouch for the token, whatever its random part looks like.
    alphabet = "".join(c if i % 2 else c.upper() for i, c in enumerate(string.ascii_lowercase[:24]))
    assert redact("posted with xo" + "xb-2048-1024-" + alphabet + " today")[1][0].kind == "slack-token"
    for stand_in in (
        "1234567890-1234567890-" + string.ascii_lowercase[:24],
        "2048-1024-your-token-here-please",
    ):
        assert redact("SLACK_BOT_TOKEN=xo" + "xb-" + stand_in)[1] == []


UUID = "123e4567-e89b-12d3-a456-426614174000"
SHA1 = "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b"
SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
LOOK_ALIKES = [
    f"request id {UUID} failed",
    f"token {UUID}",
    f"api key id: {UUID}",
    f"commit {SHA1} fixed the token refresh",
    "see commit 1a2b3c4 and abc1234def56 for the key change",
    f"sha256: {SHA256}",
    f"the secret file digest is {SHA256}",
    "internationalization is a long word, so is Supercalifragilisticexpialidocious",
    "the key internationalization-readiness matters",
    "secret is Supercalifragilisticexpialidocious",
    "edit /usr/local/lib/python3.11/site-packages/token_helper/auth.py",
    "the token cache lives in ~/.cache/huggingface/token_store_v2_backup",
    "https://example.com/a/b?x=1&token_type=bearer",
    "see https://docs.example.com:8443/auth/tokens#refresh",
    "reset your password tomorrow",
    "the password field is required",
    "Password: reset via the portal",
    "the password is stored in the vault",
    "the password is incorrect.",
    "the password was small; the token was page, too",
    "the password is swordfish.",  # a bare plain word after "is" reads as prose: kept (precision)
    "one pass is sufficient.",
    "token = get_token()",
    'password = os.environ["DB_PASSWORD"]',
    'password = os.getenv("DB_PASSWORD", "")',
    "api_key = settings.API_KEY",
    "password = self._password",
    "token: str = ''",
    "password: Optional[str] = None",
    "secret_key = secrets.token_hex(32)",
    "username, password = auth",
    "password=password",
    "password=<your-password>",
    "api_key=YOUR_API_KEY",
    "api_key: your-api-key-here",
    "password: xxx",
    "password: ****",
    "PASSWORD=${DB_PASSWORD}",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password: {{ vault_password }}",
    "export GITHUB_TOKEN=$(gh auth token)",
    "postgres://user:password@localhost/db",
    "postgres://user:${PGPASSWORD}@localhost/db",
    "max_tokens = 4096",
    '"password": 20786',
    '{"cls_token": "[CLS]", "mask_token": "[MASK]"}',
    'AttributeOID.CHALLENGE_PASSWORD: "challengePassword"',
    'HEADER_ACCESS_TOKEN = "X-Xet-Access-Token"',
    "PWD='/tmp'",
    "call me at +1 (555) 123-4567 on 2024-05-17 about the key",
    "sk-learn-compatible-estimators are fine",
    "the task-ant-colony-optimisation-v2 job",
    "Bearer authentication is described in RFC 6750",
    "tokenizer = AutoTokenizer.from_pretrained('sentence-transformers/all-MiniLM-L6-v2')",
    "MLKEM768X25519PrivateKey = rust_openssl.hpke.MLKEM768X25519PrivateKey",
    # Sentences that introduce something other than a secret, or a word rather than a token.
    "the password reset flow is broken; the password - reset flow - is broken",
    "the token budget is 4000 and the token limit for gpt-4 is 8192",
    "The password is required!",
    "the password for the account is managed by Okta",
    "the password for the NAS is swordfish.",
    "the password for this is stored in 1Password",
    "the password for the admin is end-to-end-encrypted",
    "the key to success is Consistency, the key point is that notes stay small",
    f"the key for the commit is {SHA1}",
    f"the sha256 of the key file is {SHA256}",
    f"the token for the request id is {UUID}",
    "the secret for the release is in the vault",
    "the password for the wifi is on the fridge",
    "the primary key for the users table is user_id",
    "the public key for the server is MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEq5Lx2Vb7Nm4Kc1Jd9Hf6Gs3Ta5Wr0E",
    "the token for the model is text-embedding-3-small",
    "the key for the image is data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    '"private_key_id": null, "token_id": 42, "secret_id": "my-app-role", "key_id": "kid-2024-05"',
    f'"token_id": "{SHA256}", "credential_id": "{SHA1}"',
    "xoxo-hugs-and-kisses-to-all of you",
    "MLKEM768X25519PrivateKey is the key type we use; AbstractSingletonProxyFactoryBean is the key class",
    "This is the password field. It is the key to success; consistency is the key.",
    "treat user_id as the primary key, and ETag as the cache key",
    "use `getpass()` as the password, then `keyring.get_password(name)` is the password",
    f"the checksum {SHA1} is the key hash",
    "密码错误是因为大小写。Пароль: неверный",
    "",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alikes_are_untouched(text: str) -> None:
    assert redact(text) == (text, [])


def test_redaction_is_idempotent() -> None:
    pieces = [s for _, s in PROVIDER_SECRETS] + [pem("RSA PRIVATE KEY"), "password = hunter2xyz"]
    pieces += [
        "postgres://app:s3cr3tPw@db/x",
        f"Authorization: Bearer {rand(32, 37)}",
        "my password is hunter2.",
    ]
    text = "\n\n".join(f"note {i}: {p} end" for i, p in enumerate(pieces))
    once, found = redact(text, ["ProjectX"])
    assert len(found) == len(pieces)
    assert "[REDACTED:" in once
    assert redact(once, ["ProjectX"]) == (once, [])
    # keywords that occur inside the markers themselves never match there
    marked = "[REDACTED:sensitive-keyword] and [REDACTED:password]"
    assert redact(marked, ["redacted", "sensitive", "keyword", "password"]) == (marked, [])
    assert find_secrets("already [REDACTED:openai-key] and password: [REDACTED:password]") == []


def test_sensitive_keywords_whole_word_case_insensitive() -> None:
    text = "ProjectX ships with Acme Corp; projectx-beta too, not ProjectXY or myprojectx. MÜLLER said so."
    out, found = redact(text, ["projectx", "ACME CORP", "  ", "Müller"])
    kw = "[REDACTED:sensitive-keyword]"
    assert out == f"{kw} ships with {kw}; {kw}-beta too, not ProjectXY or myprojectx. {kw} said so."
    assert {m.kind for m in found} == {"sensitive-keyword"}
    assert redact(text) == (text, [])
    assert redact("acme and Acme", "acme")[0] == f"{kw} and {kw}"  # a bare str is one keyword


def test_line_numbers_offsets_and_order_with_unicode() -> None:
    gh = "ghp_" + rand(36, 38)
    akia = "AKIA" + rand(16, 39, string.ascii_uppercase)
    text = f"🙂 émoji first {gh}\nplain line\nnaïve café\npassword = hunter2xyz\n\n\nİstanbul: {UUID}\n{akia}"
    found = find_secrets(text)
    assert [(m.kind, m.line) for m in found] == [("github-token", 1), ("password", 4), ("aws-access-key", 8)]
    assert text[found[0].start : found[0].end] == gh
    assert text[found[1].start : found[1].end] == "hunter2xyz"
    assert all(a.end <= b.start for a, b in zip(found, found[1:], strict=False))


def test_overlapping_detectors_yield_one_specific_match() -> None:
    gh = "ghp_" + rand(36, 40)
    out, found = redact(
        f"GITHUB_TOKEN={gh}\nAuthorization: Bearer {fake_jwt()}\nhttps://x:{gh}@github.com/o/r"
    )
    assert out == (
        "GITHUB_TOKEN=[REDACTED:github-token]\nAuthorization: Bearer [REDACTED:jwt]\n"
        "https://x:[REDACTED:github-token]@github.com/o/r"
    )
    assert [m.kind for m in found] == ["github-token", "jwt", "github-token"]


def test_ten_megabytes_with_a_few_secrets() -> None:
    rng = random.Random(42)
    words = (
        "the agent decided to refactor memory recall because the index was stale and the key insight was "
        "that notes should be small; commit hash token budget password reset flow api design review "
        "internationalization of the settings page, see /usr/lib/python3/x.py and https://example.com/a?b=1"
    ).split()
    secrets = ["sk-" + "proj-" + rand(60, 41, ALNUM + "_-"), "ghp_" + rand(36, 42), pem("RSA PRIVATE KEY")]
    chunks: list[str] = []
    size = 0
    while size < 10_000_000:
        line = " ".join(rng.choices(words, k=12)) + f" id {UUID} commit {SHA1}\n"
        chunks.append(line)
        size += len(line)
    for i, secret in enumerate(secrets):
        chunks.insert((i + 1) * len(chunks) // 4, f"leaked: {secret}\n")
    text = "".join(chunks)

    wall, cpu = time.perf_counter(), time.process_time()
    out, found = redact(text)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"\nredact: {len(text) / 1e6:.1f} MB in {wall:.3f}s wall, {cpu:.3f}s cpu, {len(found)} secrets")
    assert [m.kind for m in found] == ["openai-key", "github-token", "private-key"]
    assert [text[m.start : m.end] for m in found] == secrets
    assert len(out) == len(text) - sum(len(s) for s in secrets) + sum(
        len(f"[REDACTED:{m.kind}]") for m in found
    )


def test_one_huge_line_is_linear() -> None:
    # No newline anywhere: per-hit searches for the line end must be bounded.
    text = ("token key secret password internationalization " * 200_000) + "password = hunter2xyz"
    found = find_secrets(text)
    assert [(m.kind, m.line) for m in found] == [("password", 1)]


def test_many_pem_headers_without_end_are_linear() -> None:
    # Each BEGIN used to scan up to 64K for an END: quadratic. A real block still follows.
    block = pem("RSA PRIVATE KEY")
    text = "-----BEGIN RSA PRIVATE KEY-----\n\n" * 50_000 + block
    assert [(m.kind, m.start) for m in find_secrets(text)] == [("private-key", text.index(block))]


ORDINARY_WORDS = [
    "the", "agent", "memory", "note", "recall", "decided", "refactor", "because", "index", "stale",
    "key", "token", "secret", "auth", "commit", "hash", "review", "internationalization", "café",
    "Supercalifragilisticexpialidocious", "project", "v2", "2024-05-17", "README.md", "src/app.py",
]  # fmt: skip


KEY_WORDS = {"key", "token", "secret", "auth"}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(ORDINARY_WORDS), st.uuids().map(str), st.uuids().map(lambda u: str(u).upper())
        ),
        max_size=60,
    ),
    st.lists(st.sampled_from([" ", "\n", ", ", ": "]), min_size=60, max_size=60),
)
def test_ordinary_words_and_uuids_are_never_changed(words: list[str], seps: list[str]) -> None:
    # A UUID right after a key-like word is a key (Heroku, HubSpot, Snyk): only that is changed.
    kept: list[str] = []
    for w in words:
        if not (w[8:9] == "-" and KEY_WORDS & set(kept[-7:])):
            kept.append(w)
    words = kept
    text = "".join(w + s for w, s in zip(words, seps, strict=False))
    assert redact(text) == (text, [])


@pytest.mark.parametrize(
    "label", ["HEROKU_API_KEY=", "hubspot api key: ", "snyk_token: ", "the API token is ", "_authToken="]
)
def test_a_uuid_after_a_key_like_label_is_a_key(label: str) -> None:
    key = str(__import__("uuid").UUID(int=random.Random(label).getrandbits(128), version=4))
    assert redact(f"{label}{key}\n")[0] == f"{label}[REDACTED:{'password' if 0 else 'generic-secret'}]\n"


def test_provider_key_with_alternating_letters_and_digits_is_redacted() -> None:
    key = "sk-" + "proj-" + "Zq8Lx2Vb7Nm4Kc1Jd9Hf6Gs3Ta5Wr0Ey2Uo"
    text, found = redact(f"key: {key} and more")
    assert text == "key: [REDACTED:openai-key] and more"
    assert [m.kind for m in found] == ["openai-key"]
    assert redact("use sk-learn-compatible-estimators here")[1] == []
