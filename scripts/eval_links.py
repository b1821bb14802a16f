"""Does `search.link_weight` help where notes link to each other? A synthetic Obsidian-style vault.

    .venv/bin/python scripts/eval_links.py [--topics 60] [--weights 0,0.1,0.2,0.3] [--mode hybrid]

The conversation sets of eval_recall.py have no links, so there the link signal can only be
shown not to hurt. This vault has them, in the shape people write: per topic a hub note (a "map of
content") whose words a question uses and that links to a decision note saying the answer in
other words, a detail note that answers its own question directly, and distractor notes sharing
the topic's generic words; and a Home note linking to every hub. Three kinds of question:

- linked: asks about the hub's subject; the answer is the decision note the hub links to;
- direct: the answer is a note matching the question itself (the lift must not push it down);
- hub: the answer is the hub itself.

Each question is gathered once and ranked under every weight (the real Searcher, the vault indexed
by the real indexer; vectors from the packaged MiniLM in hybrid mode, none in keyword mode).
Prints R@1, R@5 and MRR per kind and weight as a Markdown table.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tiered_memory.app.memory import Memory, default_embedder_factory
from tiered_memory.model.search import Mode, SearchRequest
from tiered_memory.storage.vault import Vault, init_vault

PLACES = (
    "harbor delta ridge basin marsh cliff dune fjord lagoon mesa canyon glacier valley plateau "
    "estuary atoll bluff cove gorge heath isthmus knoll moor oasis prairie reef savanna tundra "
    "butte caldera"
).split()
THINGS = "datum crew budget vessel permit schedule sensor".split()


@dataclass
class Question:
    text: str
    answer: str
    kind: str


def build(root: Path, topics: int, seed: int = 11) -> list[Question]:
    rng = random.Random(seed)
    questions: list[Question] = []
    names = [f"{p} {q}" for p in PLACES for q in ("north", "south")][:topics]
    for i, name in enumerate(names):
        slug = name.replace(" ", "-")
        thing = THINGS[i % len(THINGS)]
        decision = f"Decision {i:03d}"
        hub = f"Notes/{slug}/Overview.md"
        write(
            root / hub,
            f"# {name.title()} overview\n\nThe {name} survey: what we settled on for the {thing} "
            f"is recorded in [[{decision}]]. Field days follow the tide table.\n",
        )
        code = rng.randint(1000, 9999)
        write(
            root / f"Notes/{slug}/{decision}.md",
            f"# {decision}\n\nWe use EPSG:{code} and keep it for every later campaign. Agreed by "
            f"the whole team after two weeks of comparison.\n",
        )
        detail = f"Notes/{slug}/Logistics.md"
        write(
            root / detail,
            f"# Logistics\n\nFor the {name} campaign the boat leaves at six and the {thing} "
            f"checklist is taped inside the cabin door.\n",
        )
        for d in range(2):
            write(
                root / f"Journal/{slug}-{d}.md",
                f"# Journal {i}-{d}\n\nTalked about the {thing} again; nothing settled. The {name.split()[0]} "
                f"weather was poor and the survey waited.\n",
            )
        questions += [
            Question(f"what did we settle on for the {thing} of the {name} survey", f"Notes/{slug}/{decision}.md", "linked"),
            Question(f"where is the {thing} checklist for the {name} campaign boat", detail, "direct"),
            Question(f"{name} survey overview", hub, "hub"),
        ]  # fmt: skip
    # The note most vaults open on: it links to every topic, so it matches every topic's name.
    write(
        root / "Home.md",
        "# Home\n\n" + "".join(f"- [[Notes/{n.replace(' ', '-')}/Overview|{n}]]\n" for n in names),
    )
    return questions


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--topics", type=int, default=60)
    parser.add_argument("--weights", default="0,0.1,0.2,0.3")
    parser.add_argument("--mode", choices=("keyword", "hybrid"), default="hybrid")
    args = parser.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        init_vault(root)
        questions = build(root, args.topics)
        vault = Vault(root)
        factory = default_embedder_factory(vault) if args.mode == "hybrid" else None
        memory = Memory(vault, embedder_factory=factory)
        memory.refresh(vectors=args.mode == "hybrid")
        searcher = memory.searcher
        mode: Mode = args.mode
        gathered = [(q, searcher.gather(SearchRequest(q.text, mode=mode, limit=10))) for q in questions]
        print(f"{len(questions)} questions over {args.topics} topics, {args.mode} mode\n")
        print("| link_weight | kind | R@1 | R@5 | MRR |")
        print("|---|---|---|---|---|")
        for weight in weights:
            cfg = dataclasses.replace(vault.config.search, link_weight=weight)
            ranks: dict[str, list[int | None]] = {}
            for question, found in gathered:
                hits = searcher.rank(found, SearchRequest(question.text, mode=mode, limit=10), cfg=cfg).hits
                paths = [h.path for h in hits]
                rank = paths.index(question.answer) + 1 if question.answer in paths else None
                ranks.setdefault(question.kind, []).append(rank)
                ranks.setdefault("all", []).append(rank)
            for kind in ("linked", "direct", "hub", "all"):
                got = ranks[kind]
                r1 = sum(1 for r in got if r == 1) / len(got)
                r5 = sum(1 for r in got if r is not None and r <= 5) / len(got)
                mrr = sum(1 / r for r in got if r is not None) / len(got)
                print(f"| {weight} | {kind} | {r1:.3f} | {r5:.3f} | {mrr:.3f} |")
        memory.close()


if __name__ == "__main__":
    main()
