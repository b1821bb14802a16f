#!/usr/bin/env python3
"""A labelled corpus for the redactor, generated from a seed (nothing secret-shaped is stored in
the repository, so no scanner or push protection trips on it).

True secrets: fake tokens in each provider's documented format (prefix + random body of the
right alphabet and length), placed in prose and config contexts (env, YAML, JSON, shell, URL
query, CLI flag, HTTP header), with a key-like label and, for formats distinctive on their own,
without one. Look-alikes that must survive: UUIDs and hex ids without a label, commit hashes,
digests, base64 images and SRI hashes, public SSH keys, long words and identifiers,
placeholders with real prefixes, env references, version strings, file paths, URLs, prose about
passwords.

    python scripts/redact_corpus.py --seed 7 --write tests/data/redact/corpus.jsonl
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import quote

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


@dataclass
class Sample:
    id: str
    kind: str
    secret: str | None  # the value that must not survive; None for a look-alike
    labelled: bool
    context: str
    text: str


Maker = Callable[[random.Random], str]


def r(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choices(alphabet, k=n))


def b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def jwt(rng: random.Random, signed: bool = True) -> str:
    header = b64url({"alg": "HS256" if signed else "none", "typ": "JWT"})
    payload = b64url({"sub": r(rng, 10, LOWER_ALNUM), "iat": rng.randrange(1_600_000_000, 1_800_000_000)})
    return f"{header}.{payload}." + (r(rng, 43, URLSAFE) if signed else "")


def a_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def password(rng: random.Random) -> str:
    words = ["River", "Falcon", "orange", "Marble", "sunset", "Copper", "violet", "Tiger", "maple", "Harbor"]
    shape = rng.randrange(3)
    if shape == 0:
        return rng.choice(words) + str(rng.randrange(10, 9999)) + rng.choice("!#$%&*?@")
    if shape == 1:
        return r(rng, rng.randrange(12, 20), ALNUM + "!#$%&*?@^~")
    return rng.choice(words).lower() + "-" + rng.choice(words).lower() + "-" + str(rng.randrange(100, 999))


SERVICES = ["NAS", "router", "staging box", "backup bucket", "CI runner", "wiki"]


# kind -> (maker, env-style label, human label, recognisable without a label)
SECRETS: dict[str, tuple[Maker, str, str, bool]] = {
    "anthropic": (
        lambda g: "sk-ant-api03-" + r(g, 93, URLSAFE) + "AA",
        "ANTHROPIC_API_KEY",
        "Anthropic key",
        True,
    ),
    "openai": (
        lambda g: "sk-proj-" + r(g, 58, URLSAFE) + "T3BlbkFJ" + r(g, 58, URLSAFE),
        "OPENAI_API_KEY",
        "OpenAI key",
        True,
    ),
    "aws-access-key": (
        lambda g: "AKIA" + r(g, 16, string.ascii_uppercase + "234567"),
        "AWS_ACCESS_KEY_ID",
        "AWS access key",
        True,
    ),
    "github": (lambda g: g.choice(["ghp_", "gho_", "ghs_"]) + r(g, 36), "GITHUB_TOKEN", "GitHub token", True),
    "github-fine-grained": (
        lambda g: "github_pat_" + r(g, 22) + "_" + r(g, 59),
        "GH_PAT",
        "GitHub token",
        True,
    ),
    "gitlab": (lambda g: "glpat-" + r(g, 20, URLSAFE), "GITLAB_TOKEN", "GitLab token", True),
    "slack": (
        lambda g: "xoxb-" + r(g, 12, string.digits) + "-" + r(g, 13, string.digits) + "-" + r(g, 24),
        "SLACK_BOT_TOKEN",
        "Slack token",
        True,
    ),
    # Short ids and a body of lowercase letters and digits, which can read as words and numbers.
    "slack-short-ids": (
        lambda g: f"xoxb-{g.randrange(100, 10_000)}-{g.randrange(100, 10_000)}-" + r(g, 24, LOWER_ALNUM),
        "SLACK_BOT_TOKEN",
        "Slack token",
        True,
    ),
    "stripe": (
        lambda g: g.choice(["sk_live_", "rk_live_", "sk_test_", "rk_prod_"]) + r(g, 24 + g.randrange(75)),
        "STRIPE_SECRET_KEY",
        "Stripe key",
        True,
    ),
    "google-api-key": (lambda g: "AIza" + r(g, 35, URLSAFE), "GOOGLE_API_KEY", "Google API key", True),
    "huggingface": (lambda g: "hf_" + r(g, 34, string.ascii_letters), "HF_TOKEN", "Hugging Face token", True),
    "npm": (lambda g: "npm_" + r(g, 36), "NPM_TOKEN", "npm token", True),
    "jwt": (lambda g: jwt(g), "SESSION_JWT", "session JWT", True),
    "jwt-unsigned": (lambda g: jwt(g, signed=False), "ID_TOKEN", "id token", True),
    "digitalocean": (
        lambda g: g.choice(["dop_v1_", "doo_v1_", "dor_v1_"]) + r(g, 64, HEX),
        "DIGITALOCEAN_TOKEN",
        "DigitalOcean token",
        True,
    ),
    "shopify": (
        lambda g: g.choice(["shpat_", "shpca_", "shppa_", "shpss_"]) + r(g, 32, HEX),
        "SHOPIFY_ACCESS_TOKEN",
        "Shopify token",
        True,
    ),
    "sendgrid": (
        lambda g: "SG." + r(g, 22, URLSAFE) + "." + r(g, 43, URLSAFE),
        "SENDGRID_API_KEY",
        "SendGrid key",
        True,
    ),
    "pypi": (
        lambda g: "pypi-AgEIcHlwaS5vcmc" + r(g, 70 + g.randrange(100), URLSAFE),
        "TWINE_PASSWORD",
        "PyPI token",
        True,
    ),
    "doppler": (lambda g: "dp.pt." + r(g, 43), "DOPPLER_TOKEN", "Doppler token", True),
    "databricks": (lambda g: "dapi" + r(g, 32, HEX), "DATABRICKS_TOKEN", "Databricks token", True),
    "linear": (lambda g: "lin_api_" + r(g, 40), "LINEAR_API_KEY", "Linear key", True),
    "postman": (
        lambda g: "PMAK-" + r(g, 24, HEX) + "-" + r(g, 34, HEX),
        "POSTMAN_API_KEY",
        "Postman key",
        True,
    ),
    "grafana": (lambda g: "glsa_" + r(g, 32) + "_" + r(g, 8, HEX), "GRAFANA_TOKEN", "Grafana token", True),
    "newrelic": (lambda g: "NRAK-" + r(g, 27, UPPER_ALNUM), "NEW_RELIC_API_KEY", "New Relic key", True),
    "atlassian": (
        lambda g: "ATATT3" + r(g, 180, URLSAFE) + "=" + r(g, 8, HEX).upper(),
        "JIRA_API_TOKEN",
        "Atlassian token",
        True,
    ),
    "pulumi": (lambda g: "pul-" + r(g, 40, HEX), "PULUMI_ACCESS_TOKEN", "Pulumi token", True),
    "age": (lambda g: "AGE-SECRET-KEY-1" + r(g, 58, BECH32), "SOPS_AGE_KEY", "age key", True),
    "twilio": (lambda g: "SK" + r(g, 32, HEX), "TWILIO_API_KEY", "Twilio key", True),
    "sentry": (lambda g: "sntryu_" + r(g, 64, HEX), "SENTRY_AUTH_TOKEN", "Sentry token", True),
    "terraform": (
        lambda g: r(g, 14) + ".atlasv1." + r(g, 67, URLSAFE),
        "TFE_TOKEN",
        "Terraform Cloud token",
        True,
    ),
    "planetscale": (
        lambda g: "pscale_tkn_" + r(g, 43, URLSAFE),
        "PLANETSCALE_TOKEN",
        "PlanetScale token",
        True,
    ),
    "flyio": (lambda g: "fm1a_" + r(g, 140, B64) + "==", "FLY_API_TOKEN", "Fly.io token", True),
    "heroku-v2": (lambda g: "HRKU-AA" + r(g, 58, URLSAFE), "HEROKU_API_KEY", "Heroku key", True),
    "vault": (lambda g: "hvs." + r(g, 95, URLSAFE), "VAULT_TOKEN", "Vault token", True),
    "dockerhub": (lambda g: "dckr_pat_" + r(g, 27, URLSAFE), "DOCKERHUB_TOKEN", "Docker Hub token", True),
    "groq": (lambda g: "gsk_" + r(g, 52), "GROQ_API_KEY", "Groq key", True),
    "notion": (lambda g: "ntn_" + r(g, 11, string.digits) + r(g, 35), "NOTION_TOKEN", "Notion token", True),
    "sendinblue": (lambda g: "xkeysib-" + r(g, 64, HEX) + "-" + r(g, 16), "BREVO_API_KEY", "Brevo key", True),
    "dynatrace": (
        lambda g: "dt0c01." + r(g, 24, UPPER_ALNUM) + "." + r(g, 64),
        "DT_API_TOKEN",
        "Dynatrace token",
        True,
    ),
    "alibaba": (lambda g: "LTAI" + r(g, 20), "ALIBABA_ACCESS_KEY_ID", "Alibaba key", True),
    "square": (lambda g: "sq0atp-" + r(g, 22, URLSAFE), "SQUARE_ACCESS_TOKEN", "Square token", True),
    "google-oauth-secret": (
        lambda g: "GOCSPX-" + r(g, 28, URLSAFE),
        "GOOGLE_CLIENT_SECRET",
        "Google client secret",
        True,
    ),
    "discord-bot": (
        lambda g: g.choice("MNO") + r(g, 23) + "." + r(g, 6, URLSAFE) + "." + r(g, 38, URLSAFE),
        "DISCORD_BOT_TOKEN",
        "Discord bot token",
        True,
    ),
    "telegram-bot": (
        lambda g: str(g.randrange(10**8, 10**10)) + ":AA" + r(g, 33, URLSAFE),
        "TELEGRAM_BOT_TOKEN",
        "Telegram bot token",
        True,
    ),
    "azure-ad-secret": (
        lambda g: r(g, 3) + str(g.randrange(10)) + "Q~" + r(g, 34, ALNUM + "_~.-"),
        "AZURE_CLIENT_SECRET",
        "Azure client secret",
        True,
    ),
    "artifactory": (lambda g: "AKCp" + r(g, 69), "ARTIFACTORY_API_KEY", "Artifactory key", True),
    "mailchimp": (
        lambda g: r(g, 32, HEX) + "-us" + str(g.randrange(1, 30)),
        "MAILCHIMP_API_KEY",
        "Mailchimp key",
        True,
    ),
    # Only a label makes these secrets: their shape is also an id's, a digest's or a word's.
    "heroku-uuid": (a_uuid, "HEROKU_API_KEY", "Heroku API key", False),
    "hubspot-uuid": (lambda g: a_uuid(g).upper(), "HUBSPOT_API_KEY", "HubSpot key", False),
    "snyk-uuid": (a_uuid, "SNYK_TOKEN", "Snyk token", False),
    "datadog-hex": (lambda g: r(g, 32, HEX), "DD_API_KEY", "Datadog API key", False),
    "sentry-hex": (lambda g: r(g, 64, HEX), "SENTRY_TOKEN", "old Sentry token", False),
    "generic-api-key": (lambda g: r(g, 32), "PARTNER_API_KEY", "partner API key", False),
    "aws-secret-key": (lambda g: r(g, 40, B64), "AWS_SECRET_ACCESS_KEY", "AWS secret key", False),
    "password": (password, "DB_PASSWORD", "database password", False),
}

LABELLED = {
    "env": "{NAME}={s}",
    "yaml": "{name}: {s}",
    "yaml-quoted": '{name}: "{s}"',
    "json": '{{"{name}": "{s}", "region": "eu-west-1"}}',
    "shell": 'export {NAME}="{s}"',
    "url-query": "curl 'https://api.acme-corp.net/v2/items?{name}={s}&page=2'",
    "prose": "The {human} is {s} (rotate it after the demo).",
    "prose-colon": "Note to self - {human}: {s}",
    "prose-introduced": "The {human} for the backup box is {s}, keep it safe.",
    "cli-flag": "deploytool push --{flag} {s} --region eu-west-1",
    "python": '{name} = "{s}"',
    "js-camel": "const {camel} = '{s}';",
    "toml": '{name} = "{s}"',
    "compose": "    environment:\n      - {NAME}={s}",
    "k8s-env": "- name: {NAME}\n  value: {s}",
    "x-header": "X-Api-Key: {s}",
    "netrc": "machine api.acme-corp.net login deploy password {s}",
    "markdown-table": "| {NAME} | {s} | prod |",
}
UNLABELLED = {
    "prose": "Deploy with {s} then restart the worker.",
    "code-arg": 'client = Client("{s}")',
    "list-item": "- staging: {s}",
    "backticks": "Pasted `{s}` into the chat by mistake.",
    "log-line": "2026-05-01T10:00:00Z INFO connected as {s} ok",
    "parenthesis": "The old one ({s}) was revoked yesterday.",
    "sentence-end": "Yesterday's value was {s}.",
    "json-array": '["{s}", "eu-west-1"]',
    "url-path": "https://api.acme-corp.net/hooks/{s}/deliver",
}
HEADER = "curl -H 'Authorization: Bearer {s}' https://api.acme-corp.net/v2/me"


def secrets_samples(rng: random.Random, per_context: int) -> list[Sample]:
    out: list[Sample] = []
    for kind, (make, env, human, alone) in SECRETS.items():
        name = env.lower()
        flag = name.replace("_", "-")
        camel = "".join(w.capitalize() if i else w for i, w in enumerate(name.split("_")))
        for context, template in LABELLED.items():
            if kind == "password" and context == "cli-flag":
                flag_name = "password"
            else:
                flag_name = flag
            for _ in range(per_context):
                s = make(rng)
                text = template.format(NAME=env, name=name, camel=camel, human=human, flag=flag_name, s=s)
                out.append(Sample("", kind, s, True, context, text))
        if kind not in ("password", "aws-secret-key", "heroku-uuid", "hubspot-uuid", "snyk-uuid"):
            for _ in range(per_context):
                s = make(rng)
                out.append(Sample("", kind, s, True, "auth-header", HEADER.format(s=s)))
        if alone:
            for context, template in UNLABELLED.items():
                for _ in range(per_context):
                    s = make(rng)
                    out.append(Sample("", kind, s, False, context, template.format(s=s)))
    for _ in range(per_context * 4):
        pw = quote(password(rng), safe="")  # a URL carries special characters percent-encoded
        out.append(
            Sample(
                "",
                "url-credentials",
                pw,
                False,
                "url",
                f"DATABASE_URL=postgres://app:{pw}@db.internal:5432/prod",
            )
        )
        u = a_uuid(rng)
        out.append(
            Sample("", "npm-authtoken-uuid", u, True, "npmrc", f"//registry.npmjs.org/:_authToken={u}")
        )
        key = r(rng, 86, B64) + "=="
        conn = f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={key};EndpointSuffix=core.windows.net"
        out.append(Sample("", "azure-storage-key", key, True, "connection-string", conn))
        basic = base64.b64encode(f"deploy:{password(rng)}".encode()).decode()
        out.append(Sample("", "basic-auth", basic, True, "auth-header", f"Authorization: Basic {basic}"))
        hook = f"https://hooks.slack.com/services/T{r(rng, 8, UPPER_ALNUM)}/B{r(rng, 8, UPPER_ALNUM)}/{r(rng, 24)}"
        out.append(Sample("", "slack-webhook", hook.rsplit("/", 1)[1], False, "url", f"Alerts go to {hook}"))
        sig = quote(r(rng, 43, B64) + "=", safe="")
        sas = f"https://acme.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-01&sig={sig}"
        out.append(Sample("", "azure-sas", sig, True, "url-query", sas))
        docker_auth = base64.b64encode(f"deploy:{password(rng)}".encode()).decode()
        auths = f'{{"auths": {{"ghcr.io": {{"auth": "{docker_auth}"}}}}}}'
        out.append(Sample("", "docker-auth", docker_auth, True, "json", auths))
        key_lines = "\\n".join(r(rng, 64, B64) for _ in range(6))
        sa = (
            '{"type": "service_account", "project_id": "acme-prod", "private_key": '
            f'"-----BEGIN PRIVATE KEY-----\\n{key_lines}\\n-----END PRIVATE KEY-----\\n", "client_email": "ci@acme-prod.iam.gserviceaccount.com"}}'
        )
        out.append(Sample("", "gcp-service-account", key_lines.split("\\n")[2], True, "json", sa))
        ak, sk = "AKIA" + r(rng, 16, string.ascii_uppercase + "234567"), r(rng, 40, B64)
        pair = f"AWS_ACCESS_KEY_ID={ak} AWS_SECRET_ACCESS_KEY={sk} aws s3 ls"
        out.append(Sample("", "aws-pair", sk, True, "shell", pair))
        key_id = r(rng, 40, HEX)
        client_id = rng.randrange(10**20, 10**21)
        sa_ids = f'{{"type": "service_account", "private_key_id": "{key_id}", "client_id": "{client_id}"}}'
        out.append(Sample("", "gcp-private-key-id", key_id, True, "json", sa_ids))
        pypirc = f"[pypi]\nusername = __token__\npassword = pypi-AgEIcHlwaS5vcmc{r(rng, 80, URLSAFE)}"
        out.append(Sample("", "pypirc", pypirc.rsplit(" ", 1)[1], True, "ini", pypirc))
        pem_body = "\n".join(r(rng, 64, B64) for _ in range(8))
        pem = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{pem_body}\n-----END OPENSSH PRIVATE KEY-----"
        out.append(
            Sample("", "private-key", pem_body.splitlines()[3], False, "pem", f"Key for the box:\n{pem}\n")
        )
    return out


def look_alikes(rng: random.Random, n: int) -> list[Sample]:
    makers: dict[str, list[Callable[[], str]]] = {
        "uuid": [
            lambda: f"request id {a_uuid(rng)} failed twice",
            lambda: f'{{"id": "{a_uuid(rng)}", "status": "done"}}',
            lambda: f"trace_id={a_uuid(rng)} span_id={r(rng, 16, HEX)}",
            lambda: f"Opened ticket {a_uuid(rng).upper()} for the outage.",
            lambda: f"primary key {a_uuid(rng)} already exists",
        ],
        "git-hash": [
            lambda: f"commit {r(rng, 40, HEX)} fixed the token refresh",
            lambda: f"git checkout {r(rng, 40, HEX)}",
            lambda: f"Reverted {r(rng, 7, HEX)} and {r(rng, 12, HEX)} on main.",
            lambda: f"token refresh fix landed in {r(rng, 40, HEX)}",
        ],
        "digest": [
            lambda: f"image: ghcr.io/acme/api@sha256:{r(rng, 64, HEX)}",
            lambda: f"md5sum {r(rng, 32, HEX)}  release.tar.gz",
            lambda: f'<script integrity="sha384-{r(rng, 64, B64)}" src="app.js"></script>',
            lambda: f'"integrity": "sha512-{r(rng, 86, B64)}=="',
        ],
        "base64-image": [
            lambda: f"![logo](data:image/png;base64,iVBORw0KGgo{r(rng, 400, B64)}=)",
            lambda: f'<img src="data:image/jpeg;base64,/9j/4AAQSkZJRg{r(rng, 300, B64)}==">',
        ],
        "ssh-public-key": [
            lambda: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{r(rng, 43, B64)} dev@laptop",
            lambda: f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{r(rng, 300, B64)} ci@runner",
        ],
        "long-word": [
            lambda: "Supercalifragilisticexpialidocious internationalization Rindfleischetikettierung",
            lambda: "AbstractSingletonProxyFactoryBean extends SimpleBeanFactoryAwareAspectInstanceFactory",
            lambda: (
                "use tokenizer_config_max_sequence_length_override for the passthrough_authentication_handler"
            ),
            lambda: "The keyboard shortcut opens the KeyboardShortcutPreferencesController.",
        ],
        "placeholder": [
            lambda: "GOOGLE_API_KEY=AIza" + "a" * 35,
            lambda: "aws_access_key_id = AKIA" + "X" * 16,
            lambda: "GITHUB_TOKEN=PUT_YOUR_TOKEN_HERE",
            lambda: "SLACK_TOKEN=xoxp-" + "1234567890",
            lambda: "STRIPE_SECRET_KEY=sk_live_" + "x" * 24,
            lambda: "token: ghp_" + "x" * 36,
            lambda: 'api_key = "your_api_key_here"',
            lambda: "OPENAI_API_KEY=<YOUR_OPENAI_KEY>",
            lambda: "password: changeme",
            lambda: "AWS key AKIAIOSFODNN7" + "EXAMPLE",
            lambda: "DIGITALOCEAN_TOKEN=dop_v1_" + "0" * 64,
            lambda: "SENDGRID_API_KEY=SG." + "x" * 22 + "." + "x" * 43,
            lambda: "token: ****************",
            lambda: "HEROKU_API_KEY=00000000-0000-0000-0000-000000000000",
            lambda: "api_key: 123e4567-e89b-12d3-a456-426614174000",
            lambda: "secret: abcdefghijklmnopqrstuvwxyz123456",
        ],
        "env-reference": [
            lambda: "API_KEY=$API_KEY",
            lambda: "token: ${{ secrets.GITHUB_TOKEN }}",
            lambda: "password = os.environ['DB_PASSWORD']",
            lambda: "secret_key = settings.SECRET_KEY",
            lambda: "export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:?missing}",
            lambda: "token = get_token(self.client_id)",
        ],
        "version": [
            lambda: (
                f"bumped to v{rng.randrange(1, 9)}.{rng.randrange(30)}.{rng.randrange(30)}-rc.{rng.randrange(9)}+build.{rng.randrange(999)}"
            ),
            lambda: (
                f"python=={rng.randrange(3, 4)}.{rng.randrange(8, 14)}.{rng.randrange(20)} numpy>=1.{rng.randrange(20, 27)}"
            ),
            lambda: (
                f"node v{rng.randrange(16, 23)}.{rng.randrange(20)}.{rng.randrange(9)} (npm 10.{rng.randrange(9)}.0)"
            ),
        ],
        "path": [
            lambda: "/usr/local/lib/python3.11/site-packages/tiered_memory/model/redact.py",
            lambda: r"C:\Users\dev\AppData\Roaming\tmem\config.toml",
            lambda: "~/.config/tmem/credentials.d/README.md",
            lambda: "see src/auth/token_refresh_handler_test.py:142",
        ],
        "url": [
            lambda: "https://github.com/acme/api/blob/main/docs/authentication.md#tokens",
            lambda: "postgres://db.internal:5432/app?sslmode=require",
            lambda: f"https://docs.acme-corp.net/keys/{r(rng, 10, LOWER_ALNUM)}/rotate",
        ],
        "prose": [
            lambda: "The password was wrong three times, so the account locked.",
            lambda: "Rotate the token every week and keep keys in the vault.",
            lambda: "Secrets are stored encrypted; the API key field is required.",
            lambda: "Authentication failed: token expired, refresh needed.",
            lambda: "We decided the session token must be sent as a cookie.",
        ],
        "id-number": [
            lambda: (
                f"order {rng.randrange(10**9, 10**10)} shipped to +1 (415) 555-{rng.randrange(1000, 9999)}"
            ),
            lambda: (
                f"ip 10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)} color #{r(rng, 6, HEX)}"
            ),
            lambda: f"account_id: {rng.randrange(10**11, 10**12)}",
        ],
        "public-key-block": [
            lambda: (
                "-----BEGIN PUBLIC KEY-----\n"
                + "\n".join(r(rng, 64, B64) for _ in range(6))
                + "\n-----END PUBLIC KEY-----"
            ),
            lambda: (
                "-----BEGIN CERTIFICATE-----\n"
                + "\n".join(r(rng, 64, B64) for _ in range(10))
                + "\n-----END CERTIFICATE-----"
            ),
            lambda: (
                "-----BEGIN PGP SIGNATURE-----\n\n"
                + "\n".join(r(rng, 64, B64) for _ in range(5))
                + "\n="
                + r(rng, 4, B64)
                + "\n-----END PGP SIGNATURE-----"
            ),
        ],
        "public-id": [
            lambda: f"arn:aws:iam::{rng.randrange(10**11, 10**12)}:role/deploy-{r(rng, 6, LOWER_ALNUM)}",
            lambda: f"customer cus_{r(rng, 14)} paid with pi_{r(rng, 24)}",
            lambda: f"publishable key pk_live_{r(rng, 24)} goes in the web app",
            lambda: (
                f"client id {rng.randrange(10**11, 10**12)}-{r(rng, 32, LOWER_ALNUM)}.apps.googleusercontent.com"
            ),
            lambda: (
                f"SENTRY_DSN=https://{r(rng, 32, HEX)}@o{rng.randrange(10**5, 10**6)}.ingest.sentry.io/{rng.randrange(10**6, 10**7)}"
            ),
            lambda: f"Slack channel C{r(rng, 8, UPPER_ALNUM)} and user U{r(rng, 8, UPPER_ALNUM)}",
            lambda: f"oid sha256:{r(rng, 64, HEX)}\nsize {rng.randrange(10**3, 10**8)}",
        ],
        "config-words": [
            lambda: "token_type: bearer\ngrant_type=password\nmax_tokens: 1024\nkey_size=2048",
            lambda: "secretKeyRef:\n  name: db-creds\n  key: password",
            lambda: "api_key: null\nauth: true\ntoken_budget: 4000",
            lambda: "KeyError: 'password' in settings.py line 42",
            lambda: "Your password must be at least 12 characters and include a symbol.",
            lambda: "Password: ******** (see 1Password, vault Engineering)",
            lambda: "uses: actions/checkout@v4\nwith:\n  token: ${{ secrets.DEPLOY_TOKEN }}",
        ],
        "prefix-words": [
            lambda: "skeleton loaders, sk-learn-compatible estimators and task-runner-configuration-v2",
            lambda: "set hf_transfer and npm_config_cache, then xoxo to the team",
            lambda: "SKU 4417-BLUE-XL is the best seller; dapifying the SG.Pathfinder module",
            lambda: "the pul-request template and AKIA-style naming are discussed in ADR-0042",
        ],
        "base64-text": [
            lambda: (
                "payload: "
                + base64.b64encode(
                    rng.choice(
                        [
                            "hello world, this is a longer string of text",
                            "The quick brown fox jumps over the lazy dog",
                        ]
                    ).encode()
                ).decode()
            ),
            lambda: "Content-MD5: " + base64.b64encode(bytes(rng.getrandbits(8) for _ in range(16))).decode(),
        ],
        "secret-prose": [
            lambda: f"The password for the {rng.choice(SERVICES)} is stored in 1Password.",
            lambda: f"the password reset flow for the {rng.choice(SERVICES)} is broken again",
            lambda: f"the token budget for the {rng.choice(SERVICES)} is {rng.randrange(1000, 99_999)}",
            lambda: f"the key for the commit is {r(rng, 40, HEX)}",
            lambda: f"the sha256 of the key file is {r(rng, 64, HEX)}",
            lambda: f"the token for the request id is {a_uuid(rng)}",
            lambda: f"the public key for the server is MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE{r(rng, 86, B64)}",
            lambda: "The key to the design is that notes stay small; the key point is consistency.",
            lambda: f"the password for the {rng.choice(SERVICES)} is managed by Okta",
            lambda: "the token for the model is text-embedding-3-small, the password is required!",
            lambda: f'"private_key_id": null, "token_id": "{a_uuid(rng)}", "secret_id": "deploy-role"',
            lambda: "the password for the admin is end-to-end-encrypted; state-of-the-art, they say",
        ],
        "identifier": [
            lambda: f"task-{r(rng, 12, LOWER_ALNUM)} finished",
            lambda: f"k8s pod api-server-{r(rng, 10, LOWER_ALNUM)}-{r(rng, 5, LOWER_ALNUM)} restarted",
            lambda: f"s3://acme-backups/{rng.randrange(2020, 2027)}/db-{r(rng, 8, HEX)}.sql.gz",
        ],
    }
    out: list[Sample] = []
    for kind, options in makers.items():
        for i in range(n):
            text = options[i % len(options)]()
            out.append(Sample("", kind, None, False, "look-alike", text))
    return out


# Written after the rules above were tuned and never tuned on: a check that the figures are not
# only the rules fitting the corpus they were built with.
HELD_OUT_LABELLED = {
    "go-struct": '\tAPIKey: "{s}",',
    "powershell": '$env:{NAME} = "{s}"',
    "dockerfile": "ENV {NAME} {s}",
    "ini-spaced": "{name} = {s}",
    "xml": '<add key="{NAME}" value="{s}" />',
    "properties": "app.{dotted}={s}",
    "http-dump": "GET /v1/me HTTP/1.1\nHost: api.acme-corp.net\nX-Auth-Token: {s}",
    "connection-string": "Server=db;Database=app;User Id=sa;Password={s};",
}
HELD_OUT_UNLABELLED = {
    "chat": "try this one → {s}",
    "arrow-after": "{s} <- that's the one for prod",
    "code-fence": "```\n{s}\n```",
    "quoted-comma": "use '{s}', not the old one",
}


def held_out(rng: random.Random, per_context: int) -> list[Sample]:
    out: list[Sample] = []
    for kind, (make, env, _human, alone) in SECRETS.items():
        for context, template in HELD_OUT_LABELLED.items():
            for _ in range(per_context):
                s = make(rng)
                text = template.format(NAME=env, name=env.lower(), dotted=env.lower().replace("_", "."), s=s)
                out.append(Sample("", kind, s, True, "held-out:" + context, text))
        if alone:
            for context, template in HELD_OUT_UNLABELLED.items():
                for _ in range(per_context):
                    s = make(rng)
                    out.append(Sample("", kind, s, False, "held-out:" + context, template.format(s=s)))
    looks: dict[str, Callable[[], str]] = {
        "docker-id": lambda: f"container {r(rng, 64, HEX)} exited (137)",
        "registry-guid": lambda: (
            "HKEY_LOCAL_MACHINE\\SOFTWARE\\Classes\\CLSID\\{" + a_uuid(rng).upper() + "}"
        ),
        "json-log": lambda: (
            f'{{"request_id": "{a_uuid(rng)}", "token_count": {rng.randrange(9999)}, "ms": 12}}'
        ),
        "video-id": lambda: f"https://www.youtube.com/watch?v={r(rng, 11, URLSAFE)}&t=42s",
        "doc-url": lambda: (
            f"https://docs.google.com/document/d/{r(rng, 44, URLSAFE)}/edit#heading=h.{r(rng, 12, LOWER_ALNUM)}"
        ),
        "asset-name": lambda: f"dist/app.{r(rng, 8, HEX)}.js and vendor-{r(rng, 20, LOWER_ALNUM)}.css",
        "bitcoin": lambda: (
            f"donate to 1{r(rng, 33, '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz')}"
        ),
        "ipfs": lambda: (
            f"ipfs://Qm{r(rng, 44, '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz')}"
        ),
        "jwt-header-only": lambda: "the header eyJhbGciOiJIUzI1NiJ9 says HS256",
        "utm-url": lambda: (
            f"https://acme-corp.net/pricing?utm_source=newsletter&utm_campaign={r(rng, 10, LOWER_ALNUM)}&ref={r(rng, 8)}"
        ),
        "lockfile": lambda: (
            f'resolved "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz#{r(rng, 40, HEX)}"'
        ),
        "lorem": lambda: "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor.",
    }
    for kind, make_text in looks.items():
        for _ in range(per_context * 6):
            out.append(Sample("", kind, None, False, "held-out", make_text()))
    return out


def build(seed: int = 7, per_context: int = 2, look_alike_per_kind: int = 24) -> list[Sample]:
    rng = random.Random(seed)
    samples = (
        secrets_samples(rng, per_context) + look_alikes(rng, look_alike_per_kind) + held_out(rng, per_context)
    )
    for i, sample in enumerate(samples):
        sample.id = f"{sample.kind}-{i}"
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--write", type=Path, help="write the corpus as JSON lines to this file")
    args = parser.parse_args()
    samples = build(args.seed)
    lines = "".join(json.dumps(asdict(s), ensure_ascii=False) + "\n" for s in samples)
    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(lines, encoding="utf-8")
    else:
        print(lines, end="")


if __name__ == "__main__":
    main()
