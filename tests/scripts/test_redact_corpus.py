"""The redactor against the seeded labelled corpus (scripts/redact_corpus.py): recall and the
false-positive rate stay at their targets, overall and for every kind."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _load(name: str) -> ModuleType:
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_recall_and_false_positives_meet_their_targets() -> None:
    corpus, evaluation = _load("redact_corpus"), _load("eval_redact")
    report = evaluation.evaluate(corpus.build(seed=11))
    assert report.n_secrets > 1000 and report.n_look_alikes > 300
    assert report.recall >= 0.95 and report.recall_unlabelled >= 0.95
    assert report.false_positive_rate <= 0.05
    weak = {k: f"{r.rate:.0%}" for k, r in report.secrets.items() if r.rate < 0.9}
    noisy = {k: f"{r.rate:.0%}" for k, r in report.look_alikes.items() if r.rate > 0.1}
    assert not weak and not noisy, (weak, noisy)
