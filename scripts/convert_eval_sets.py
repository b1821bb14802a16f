#!/usr/bin/env python3
"""Convert public conversation-memory benchmarks into the neutral JSON Lines shape of ../shared/eval/.

    .venv/bin/python scripts/convert_eval_sets.py realtalk /work/.mirror/danny911kr+REALTALK/repo
    .venv/bin/python scripts/convert_eval_sets.py prefeval /work/.mirror/amazon-science+PrefEval/repo

SOURCE is a fetched copy of the source repository: a git directory (read at --rev, default HEAD,
with `git show`, so a bare mirror works) or a plain folder holding the same files. Each command
writes `documents.jsonl` (one message per line), `queries.jsonl` (one question per line, `evidence`
= document ids), `manifest.json` (source, commit, sha256 of every file read, licence, counts) and a
short `README.md` into OUT (default ../shared/eval/<set name>). The data never goes into the
repository: docs/eval/datasets.md records what each set is and how it was made.

Conversions are deterministic: the same source at the same commit gives byte-identical files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_EVAL = next(
    (p / "shared" / "eval" for p in (_ROOT.parent, _ROOT.parent.parent) if (p / "shared" / "eval").is_dir()),
    _ROOT.parent / "shared" / "eval",
)


class SourceError(Exception):
    """The source is not what a converter expects (missing file, unreadable JSON, bad shape)."""


class Source:
    """A fetched repository, read at one revision: a git directory or a plain folder of files."""

    def __init__(self, path: Path, rev: str = "HEAD") -> None:
        self.path = path
        self.rev = rev
        self.git = (path / "HEAD").is_file() and (path / "objects").is_dir() or (path / ".git").exists()
        self.commit = self._git("rev-parse", f"{rev}^{{commit}}").decode().strip() if self.git else None
        self.read_files: dict[str, str] = {}  # path -> sha256 of every file a converter read

    def _git(self, *args: str) -> bytes:
        done = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True)
        if done.returncode != 0:
            raise SourceError(f"git {' '.join(args)} in {self.path}: {done.stderr.decode().strip()}")
        return done.stdout

    def files(self, folder: str) -> list[str]:
        """The paths of the files directly inside `folder`, sorted."""
        if self.git:
            out = self._git("ls-tree", "--name-only", f"{self.commit}:{folder}").decode().splitlines()
            return sorted(f"{folder}/{name}" for name in out)
        where = self.path / folder
        if not where.is_dir():
            raise SourceError(f"{where} is not a folder")
        return sorted(f"{folder}/{p.name}" for p in where.iterdir())

    def read(self, rel: str) -> bytes:
        if self.git:
            data = self._git("show", f"{self.commit}:{rel}")
        else:
            try:
                data = (self.path / rel).read_bytes()
            except OSError as error:
                raise SourceError(f"cannot read {self.path / rel}: {error.strerror}") from None
        self.read_files[rel] = hashlib.sha256(data).hexdigest()
        return data

    def json(self, rel: str) -> Any:
        try:
            return json.loads(self.read(rel))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise SourceError(f"{rel} is not JSON: {error}") from None


@dataclass
class Converted:
    """One set in the neutral shape, with what its README and manifest say about it."""

    name: str
    documents: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    manifest: dict[str, Any]
    readme: str
    problems: list[str] = field(default_factory=list)


def write_set(converted: Converted, source: Source, out: Path) -> None:
    """Write the set's four files; a rerun replaces them whole (each via a temporary file)."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        **converted.manifest,
        "source_commit": source.commit,
        "source_files": dict(sorted(source.read_files.items())),
        # One number for all of them: sha256 of the "<sha256>  <path>" lines, sorted by path.
        "source_digest": hashlib.sha256(
            "".join(f"{digest}  {path}\n" for path, digest in sorted(source.read_files.items())).encode()
        ).hexdigest(),
        "documents": len(converted.documents),
        "queries": len(converted.queries),
        "queries_with_evidence": sum(1 for q in converted.queries if q["evidence"]),
        "queries_by_category": _count(converted.queries, "category"),
        "queries_with_evidence_by_category": _count(
            [q for q in converted.queries if q["evidence"]], "category"
        ),
        "conversations": _count(converted.documents, "conversation"),
        "problems": converted.problems,
    }
    files = {
        "documents.jsonl": "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in converted.documents),
        "queries.jsonl": "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in converted.queries),
        "manifest.json": json.dumps(manifest, indent=1, ensure_ascii=False) + "\n",
        "README.md": converted.readme.format(**_readme_fields(manifest)),
    }
    for name, text in files.items():
        partial = out / f".{name}.partial"
        partial.write_text(text, encoding="utf-8")
        partial.replace(out / name)


def _count(rows: list[dict[str, Any]], key: str) -> dict[str, int]:
    return {
        str(k): n for k, n in sorted(Counter(r.get(key) for r in rows).items(), key=lambda kv: str(kv[0]))
    }


def _readme_fields(manifest: dict[str, Any]) -> dict[str, Any]:
    files = "\n".join(f"  - `{path}` sha256 `{digest}`" for path, digest in manifest["source_files"].items())
    files += f"\n  - all of them: `{manifest['source_digest']}` (sha256 of `sha256sum`-style lines, sorted by path)"
    problems = "; ".join(manifest["problems"]) or "none"
    return {
        **manifest,
        "source_file_list": files,
        "n_conversations": len(manifest["conversations"]),
        "problems": problems,
    }


# --- REALTALK ------------------------------------------------------------------------------------

REALTALK_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "commonsense"}
_DIA_ID = re.compile(r"D\s*(\d+)\s*:\s*(\d+)")
_CHAT_FILE = re.compile(r"data/(Chat_(\d+)_[^/]+)\.json")


def realtalk_evidence(raw: list[str], known: set[str]) -> tuple[list[str], list[str]]:
    """The dialog ids that `raw` names and the conversation has, in order, and those it lacks.

    The gold lists are hand-typed: "D5:12;D5:16", "D 2:18", "D20:6." and ranges such as
    "D12:3-D12:5" (expanded when both ends are in one session) all occur.
    """
    found: list[str] = []
    for item in raw:
        for part in re.split(r"[;,]", item):
            ids = _DIA_ID.findall(part)
            if len(ids) == 2 and "-" in part and ids[0][0] == ids[1][0]:
                session, first, last = ids[0][0], int(ids[0][1]), int(ids[1][1])
                found += [f"D{session}:{i}" for i in range(first, last + 1) if f"D{session}:{i}" in known]
            else:
                found += [f"D{s}:{t}" for s, t in ids]
    unique = list(dict.fromkeys(found))
    return [i for i in unique if i in known], [i for i in unique if i not in known]


def _realtalk_date(raw: str) -> str | None:
    try:
        return datetime.strptime(raw.strip(), "%d.%m.%Y, %H:%M:%S").isoformat()
    except ValueError:
        return None


def convert_realtalk(source: Source) -> Converted:
    """REALTALK: 21 days of real messaging-app chat between pairs of people, with memory questions."""
    chats = sorted(
        (
            (int(m.group(2)), m.group(1), rel)
            for rel in source.files("data")
            if (m := _CHAT_FILE.fullmatch(rel))
        ),
    )
    if not chats:
        raise SourceError(f"{source.path}: no data/Chat_<n>_<names>.json files")
    documents: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    problems: list[str] = []
    unresolved = skipped = 0
    for _, conv, rel in chats:
        chat = source.json(rel)
        sessions = sorted((int(key.split("_")[1]), key) for key in chat if re.fullmatch(r"session_\d+", key))
        known: set[str] = set()
        for number, key in sessions:
            session_date = chat.get(f"{key}_date_time") or ""
            for index, message in enumerate(chat[key]):
                text = (message.get("clean_text") or "").strip()
                caption = message.get("blip_caption") or None
                if not text and not caption:
                    skipped += 1
                    continue
                said = message.get("date_time") or session_date
                known.add(message["dia_id"])
                documents.append(
                    {
                        "id": f"{conv}/{message['dia_id']}",
                        "conversation": conv,
                        "session": key,
                        "session_index": number,
                        "turn_index": index,
                        "date": _realtalk_date(said),
                        "date_raw": said,
                        "speaker": message.get("speaker") or "unknown",
                        "dia_id": message["dia_id"],
                        "text": text,
                        "image_caption": caption,
                        "image_query": None,
                    }
                )
        for n, qa in enumerate(chat.get("qa", [])):
            evidence, missing = realtalk_evidence([str(e) for e in qa.get("evidence") or []], known)
            if not evidence:
                unresolved += 1
            category = qa.get("category")
            queries.append(
                {
                    "id": f"{conv}/q{n:03d}",
                    "conversation": conv,
                    "question": qa["question"],
                    "answer": str(qa.get("answer", "")),
                    "category": category,
                    "category_name": REALTALK_CATEGORIES.get(category, "unknown"),
                    "evidence": [f"{conv}/{i}" for i in evidence],
                    "evidence_raw": qa.get("evidence") or [],
                    "evidence_missing": missing,
                }
            )
    if skipped:
        problems.append(f"{skipped} messages with neither text nor image caption left out")
    if unresolved:
        problems.append(
            f"{unresolved} questions whose gold evidence names no message of the cleaned chat "
            "(removed messages or no evidence given): kept with evidence []"
        )
    missing_ids = sum(len(q["evidence_missing"]) for q in queries)
    if missing_ids:
        problems.append(f"{missing_ids} gold evidence ids name messages the cleaned chat lacks: dropped")
    manifest = {
        "dataset": "REALTALK memory probing",
        "source_repo": "https://github.com/danny911kr/REALTALK",
        "license": "none stated in the source repository (no LICENSE file); released by the authors "
        "with their paper as a research benchmark. Use for research evaluation only, with attribution; "
        "do not redistribute.",
        "citation": "Lee, Maharana, Pujara, Ren, Barbieri, REALTALK: A 21-Day Real-World Dataset for "
        "Long-Term Conversation (arXiv:2502.13270), 2025",
        "subset": "all 10 chats of data/*.json (the cleaned chats; data/locomo/ and data/raw/ are not read)",
        "category_names": {str(k): v for k, v in REALTALK_CATEGORIES.items()},
    }
    return Converted("realtalk", documents, queries, manifest, REALTALK_README, problems)


REALTALK_README = """# realtalk

**REALTALK** memory probing: {n_conversations} real messaging-app chats between pairs of people (US
students, 21 days each, nothing generated), one message per document, and the memory-probing
questions written on them with gold evidence messages.

- Source: {source_repo} at commit `{source_commit}`; files read:
{source_file_list}
- Licence: {license}
- Citation: {citation}
- Subset: {subset}.
- {documents} documents (messages), {queries} queries, {queries_with_evidence} with evidence.
- Categories (same codes as LoCoMo): 1 multi-hop, 2 temporal, 3 commonsense.
  Per category: {queries_with_evidence_by_category} (with evidence).
- Problems met in conversion: {problems}

Documents: `id` = `<chat>/<dia_id>`, `session` = `session_<n>`, `date` = the message's own send time
(ISO), `date_raw` as the source wrote it, `speaker` as the chat export names them (in Chat_1 the
questions call "Emi" by her chat name, "Kate"), `image_caption` = the BLIP caption of a shared photo.
Queries: `evidence` = the gold messages that exist in the cleaned chat; `evidence_raw` is the
source's hand-typed list, `evidence_missing` what of it names no message.

## How to score
As for locomo-dev: for each query search only its own chat; R@k = share of the evidence ids in the
top k (k = 5, 10), averaged over queries with evidence; MRR = 1 / rank of the first evidence hit.

Made by `scripts/convert_eval_sets.py realtalk SOURCE` (tiered-memory); see docs/eval/datasets.md.
"""


# --- PrefEval ------------------------------------------------------------------------------------

PREFEVAL_CATEGORIES = {1: "explicit preference", 2: "implicit preference (choice)"}
PREFEVAL_FILLERS_PER_USER = 4
PREFEVAL_START = datetime(2024, 1, 1, 9, 0)


def convert_prefeval(source: Source, users: int | None = None) -> Converted:
    """PrefEval: stated or implied preferences hidden among real user/assistant chats.

    Each synthetic user u holds, for every topic with more than u preferences, the topic's u-th
    preference: stated outright (explicit) or revealed by picking among offered options (implicit,
    choice-based), alternating by user and topic. Their history is those preference sessions
    plus PREFEVAL_FILLERS_PER_USER of the benchmark's real LMSYS-Chat-1M conversations (long
    assistant answers), in a seeded order, one session a day. The query is the topic's question
    (a request whose generic answer would violate the preference); the evidence is the turn(s)
    that carry the preference.
    """
    explicit_dir = "benchmark_dataset/explicit_preference"
    choice_dir = "benchmark_dataset/implicit_preference/choice-based"
    topics = [rel.rsplit("/", 1)[1].removesuffix(".json") for rel in source.files(explicit_dir)]
    topics = [t for t in topics if t]
    if not topics:
        raise SourceError(f"{source.path}: no {explicit_dir}/*.json files")
    explicit = {t: source.json(f"{explicit_dir}/{t}.json") for t in topics}
    choice = {t: source.json(f"{choice_dir}/{t}.json") for t in topics}
    fillers = source.json("benchmark_dataset/filtered_inter_turns.json")
    problems: list[str] = []
    # The choice-based files hold the same preferences, not always in the same order or number.
    talks = {t: {c["preference"]: c["conversation"] for c in choice[t]} for t in topics}
    no_talk = 0
    most = max(len(v) for v in explicit.values())
    users = most if users is None else min(users, most)
    documents: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for user in range(users):
        conv = f"user-{user:02d}"
        sessions: list[tuple[str, list[tuple[str, str]], dict[str, Any] | None]] = []
        for t_index, topic in enumerate(topics):
            if user >= len(explicit[topic]):
                continue
            entry = explicit[topic][user]
            implicit = (user + t_index) % 2 == 1
            if implicit and entry["preference"] not in talks[topic]:
                implicit, no_talk = False, no_talk + 1
            if implicit:
                talk = talks[topic][entry["preference"]]
                turns = [
                    ("user", talk["query"]),
                    ("assistant", talk["assistant_options"]),
                    ("user", talk["user_selection"]),
                    ("assistant", talk["assistant_acknowledgment"]),
                ]
                gold = [1, 2]  # the options offered and the user's pick reveal the preference together
            else:
                turns, gold = [("user", entry["preference"])], [0]
            query = {
                "question": entry["question"],
                "answer": entry["preference"],
                "category": 2 if implicit else 1,
                "category_name": PREFEVAL_CATEGORIES[2 if implicit else 1],
                "topic": topic,
                "explanation": entry.get("explanation", ""),
                "gold_turns": gold,
            }
            sessions.append((f"pref-{topic}", turns, query))
        for j in range(PREFEVAL_FILLERS_PER_USER):
            filler = fillers[(user * PREFEVAL_FILLERS_PER_USER + j) % len(fillers)]
            turns = [
                (m["role"], m["content"]) for m in filler["conversation"] if m.get("content", "").strip()
            ]
            sessions.append((f"chat-{filler['conversation_id'][:12]}", turns, None))
        random.Random(f"prefeval/{conv}").shuffle(sessions)
        for number, (name, turns, asked) in enumerate(sessions, start=1):
            key = f"session_{number}_{name}"
            day = PREFEVAL_START + timedelta(days=number - 1)
            ids = []
            for index, (role, text) in enumerate(turns):
                doc_id = f"{conv}/S{number}:{index + 1}"
                ids.append(doc_id)
                documents.append(
                    {
                        "id": doc_id,
                        "conversation": conv,
                        "session": key,
                        "session_index": number,
                        "turn_index": index,
                        "date": (day + timedelta(minutes=index)).isoformat(),
                        "date_raw": None,
                        "speaker": role.capitalize(),
                        "role": role,
                        "dia_id": f"S{number}:{index + 1}",
                        "text": text,
                        "image_caption": None,
                        "image_query": None,
                    }
                )
            if asked is not None:
                gold = asked.pop("gold_turns")
                queries.append(
                    {
                        "id": f"{conv}/{asked['topic']}",
                        "conversation": conv,
                        **asked,
                        "evidence": [ids[i] for i in gold],
                    }
                )
    if no_talk:
        problems.append(f"{no_talk} preferences due for the choice-based form have none: stated explicitly")
    manifest = {
        "dataset": "PrefEval preference following (explicit and implicit choice-based)",
        "source_repo": "https://github.com/amazon-science/PrefEval",
        "license": "CC BY-NC 4.0 (LICENSE in the source repo): non-commercial use with attribution. "
        "The filler conversations (benchmark_dataset/filtered_inter_turns.json) are LMSYS-Chat-1M "
        "conversations, under the LMSYS-Chat-1M Dataset License Agreement (research use, no redistribution).",
        "citation": "Zhao et al., Do LLMs Recognize Your Preferences? Evaluating Personalized Preference "
        "Following in LLMs, ICLR 2025 (arXiv:2502.09597)",
        "subset": f"{users} synthetic users; user u holds the u-th preference of every topic that has one "
        f"(all {sum(len(v) for v in explicit.values())} preferences when users = the largest topic), "
        f"explicit when (u + topic index) is even, else choice-based (matched by preference text); {PREFEVAL_FILLERS_PER_USER} LMSYS "
        "chats per user ((u*4 + j) mod 24); sessions shuffled with random.Random('prefeval/user-NN'); "
        "one session a day from 2024-01-01 (synthetic dates)",
        "category_names": {str(k): v for k, v in PREFEVAL_CATEGORIES.items()},
    }
    return Converted("prefeval", documents, queries, manifest, PREFEVAL_README, problems)


PREFEVAL_README = """# prefeval

**PrefEval** preference following as recall: {n_conversations} synthetic users, each with a history
of user/assistant sessions. Per topic (20 topics: dietary, travel, shopping, …) a user states one
preference outright (category 1) or reveals it by picking among options an assistant offered
(category 2); between them sit real LMSYS-Chat-1M conversations with long assistant answers. The
query is a later request whose generic answer would violate the preference ("I'll be visiting Rome
soon. What are some must-try local restaurants you'd recommend for me?" after "I strictly avoid
restaurants that serve foods containing gluten…"); the evidence is the turn(s) carrying it. Queries
rarely share words with their evidence: this set measures whether recall finds what a
request *implies*, not what it says.

- Source: {source_repo} at commit `{source_commit}`; files read:
{source_file_list}
- Licence: {license}
- Citation: {citation}
- Subset: {subset}.
- {documents} documents (turns), {queries} queries, all with evidence; by category: {queries_by_category}.
- Problems met in conversion: {problems}

Documents: `id` = `<user>/S<session>:<turn>`, `speaker` = User or Assistant (`role` as in the
source), synthetic `date` (`date_raw` null). Queries: `answer` = the preference, `topic`,
`explanation` (why a generic answer fails); category 1 evidence = the user's statement, category 2
evidence = the assistant's options and the user's pick.

## How to score
For each query search only its own user's history; R@k = share of the evidence ids in the top k
(k = 5, 10), averaged; MRR = 1 / rank of the first evidence hit.

Made by `scripts/convert_eval_sets.py prefeval SOURCE` (tiered-memory); see docs/eval/datasets.md.
"""


# --- BEAM ----------------------------------------------------------------------------------------

BEAM_ABILITIES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
BEAM_ANSWER_KEYS = ("answer", "ideal_answer", "ideal_response", "ideal_summary", "expected_compliance")
# Each generated user message ends with its plan position ("... ->-> 3,2"): generation metadata.
_BEAM_MARK = re.compile(r"\s*->->\s*\d+\s*,\s*\d+\s*$")


def _ids_in(value: Any) -> list[int]:
    """Every message id in a `source_chat_ids` value: an int, a list, a dict of lists, nested."""
    if isinstance(value, dict):
        return [i for v in value.values() for i in _ids_in(v)]
    if isinstance(value, list):
        return [i for v in value for i in _ids_in(v)]
    return [value] if isinstance(value, int) and not isinstance(value, bool) else []


def _beam_date(anchor: str | None) -> datetime | None:
    try:
        return datetime.strptime(anchor or "", "%B-%d-%Y")
    except ValueError:
        return None


def convert_beam(source: Source, size: str = "100K") -> Converted:
    """BEAM: long user/assistant conversations (coding, maths, planning) with probing questions.

    Every message is a document; a session is one main question with its follow-ups. Each
    probing question's evidence is the messages its `source_chat_ids` name; abstention
    questions (nothing in the chat answers them) keep `evidence: []`.
    """
    folder = f"chats/{size}"
    chats = sorted(
        (int(rel.rsplit("/", 1)[1]), rel) for rel in source.files(folder) if rel.rsplit("/", 1)[1].isdigit()
    )
    if not chats:
        raise SourceError(f"{source.path}: no {folder}/<n>/ folders")
    documents: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    problems: list[str] = []
    missing = 0
    for number, rel in chats:
        conv = f"beam-{size.lower()}-{number:02d}"
        names = set(source.files(rel))
        # The benchmark's own runner prefers the truncated chat where one exists: so do we.
        chat_file = (
            f"{rel}/chat_trunecated.json" if f"{rel}/chat_trunecated.json" in names else f"{rel}/chat.json"
        )
        chat = source.json(chat_file)
        known: dict[int, str] = {}
        when: datetime | None = None
        session_index = 0
        for batch in chat:
            for turn in batch.get("turns", []):
                session_index += 1
                session = f"session_{session_index}"
                for index, message in enumerate(turn):
                    when = _beam_date(message.get("time_anchor")) or when
                    doc_id = f"{conv}/m{message['id']}"
                    known[message["id"]] = doc_id
                    documents.append(
                        {
                            "id": doc_id,
                            "conversation": conv,
                            "session": session,
                            "session_index": session_index,
                            "turn_index": index,
                            "date": (when + timedelta(minutes=index)).isoformat() if when else None,
                            "date_raw": message.get("time_anchor"),
                            "speaker": message["role"].capitalize(),
                            "role": message["role"],
                            "dia_id": f"m{message['id']}",
                            "text": _BEAM_MARK.sub("", message["content"]),
                            "image_caption": None,
                            "image_query": None,
                        }
                    )
        probing = source.json(f"{rel}/probing_questions/probing_questions.json")
        for ability in BEAM_ABILITIES:
            for n, item in enumerate(probing.get(ability, [])):
                ids = list(dict.fromkeys(_ids_in(item.get("source_chat_ids"))))
                missing += sum(1 for i in ids if i not in known)
                answer = next((str(item[k]) for k in BEAM_ANSWER_KEYS if item.get(k)), "")
                queries.append(
                    {
                        "id": f"{conv}/{ability}-{n}",
                        "conversation": conv,
                        "question": item["question"],
                        "answer": answer,
                        "category": BEAM_ABILITIES.index(ability) + 1,
                        "category_name": ability.replace("_", " "),
                        "difficulty": item.get("difficulty"),
                        "evidence": [known[i] for i in ids if i in known],
                    }
                )
    if missing:
        problems.append(f"{missing} source_chat_ids name no message of their chat: dropped")
    no_evidence = [q for q in queries if not q["evidence"] and q["category_name"] != "abstention"]
    if no_evidence:
        problems.append(
            f"{len(no_evidence)} non-abstention questions name no source message: kept with evidence []"
        )
    manifest = {
        "dataset": f"BEAM probing questions ({size} chats)",
        "source_repo": "https://github.com/mohammadtavakoli78/BEAM",
        "license": "no LICENSE file in the source repository; the Hugging Face copy (Mohammadta/BEAM, not "
        "reachable from here) was not checked, and a derived data set there lists CC BY-SA 4.0. "
        "Treat as research evaluation with attribution until the card is verified.",
        "citation": "Tavakoli et al., Beyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory "
        "in LLMs (arXiv:2510.27246), 2025",
        "subset": f"all {len(chats)} chats of {folder}/ (the benchmark's smallest size, ~128K tokens each), "
        "chat_trunecated.json where the chat has one (as the benchmark's runner does)",
        "category_names": {str(i + 1): a.replace("_", " ") for i, a in enumerate(BEAM_ABILITIES)},
    }
    return Converted(f"beam-{size.lower()}", documents, queries, manifest, BEAM_README, problems)


BEAM_README = """# beam-100k

**BEAM** (Beyond a Million Tokens), its {n_conversations} chats of about 128K tokens: long
generated user/assistant conversations (a Flask budget tracker, scheduling across time zones, a
career and money plan, hiring with AI, books and films for the family) in which the assistant's messages are long (about 3,900 characters on average, code and lists), with
20 probing questions per chat over ten memory abilities, among them instruction following ("always
format code with syntax highlighting") and preference following.

- Source: {source_repo} at commit `{source_commit}`; files read:
{source_file_list}
- Licence: {license}
- Citation: {citation}
- Subset: {subset}.
- {documents} documents (messages), {queries} queries, {queries_with_evidence} with evidence.
- Categories: 1 abstention (nothing answers it: `evidence: []`), 2 contradiction resolution,
  3 event ordering, 4 information extraction, 5 instruction following, 6 knowledge update,
  7 multi-session reasoning, 8 preference following, 9 summarization, 10 temporal reasoning.
- Problems met in conversion: {problems}

Documents: `id` = `<chat>/m<message id>`, `session` = one main question and its follow-ups,
`speaker` = User or Assistant, `date` from the chat's time anchors (carried forward; null before the
first), `date_raw` the anchor itself. The generator's position marker at the end of user messages
("->-> 3,2") is removed. Queries: `answer` = the reference answer (or the compliance expected),
`difficulty` as given, `evidence` = the messages the question's `source_chat_ids` name.

## How to score
For each query search only its own chat; R@k = share of the evidence ids in the top k (k = 5, 10),
averaged over queries with evidence; MRR = 1 / rank of the first evidence hit. Abstention
questions have no evidence: score them by whether nothing relevant is returned, or leave them out.

Made by `scripts/convert_eval_sets.py beam SOURCE` (tiered-memory); see docs/eval/datasets.md.
"""


# --- command line --------------------------------------------------------------------------------

CONVERTERS: dict[str, tuple[Callable[..., Converted], str]] = {
    "realtalk": (convert_realtalk, "REALTALK (danny911kr/REALTALK): real two-person chat"),
    "prefeval": (convert_prefeval, "PrefEval (amazon-science/PrefEval): preference following"),
    "beam": (convert_beam, "BEAM (mohammadtavakoli78/BEAM): long assistant messages, instructions"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="set", required=True)
    for name, (_, help_text) in CONVERTERS.items():
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("source", type=Path, help="the fetched repository (git directory or folder)")
        sub.add_argument("--rev", default="HEAD", help="revision to read from a git source")
        sub.add_argument("--out", type=Path, help=f"output folder (default {DEFAULT_EVAL}/{name})")
        if name == "prefeval":
            sub.add_argument("--users", type=int, help="only the first N users (default: all)")
    args = parser.parse_args(argv)
    convert, _ = CONVERTERS[args.set]
    try:
        source = Source(args.source, args.rev)
        extra = {"users": args.users} if args.set == "prefeval" and args.users else {}
        converted = convert(source, **extra)
    except SourceError as error:
        print(f"convert_eval_sets: {error}", file=sys.stderr)
        return 2
    out = args.out or DEFAULT_EVAL / converted.name
    write_set(converted, source, out)
    print(
        f"{converted.name}: {len(converted.documents)} documents, {len(converted.queries)} queries -> {out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
