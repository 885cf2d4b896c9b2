"""A statistical recogniser for PHI in free text: a linear-chain CRF (CRFsuite, through
python-crfsuite) over tokens, their shapes, their neighbours, word lists (US Census first
names and surnames, common and clinical words) and what the rules found around them.

The rules see labels, titles and formats; the CRF sees what a name looks like where no rule
looks (``per douglass will hold``, ``suzette and hank``, a name in another script) and learns
when a rule's guess is wrong. Its spans are added to the rules' (``engine.deid.detect``).

The model ships as data, not as a file: it is trained deterministically, at first use, from
the notes ``engine.deid.synthetic`` generates (Vetted's own templates and surrogate values,
nothing from a patient), and kept in a file under the cache folder so the next process loads
it. ``train`` also takes any annotated corpus in the benchmark's JSONL shape (a hospital's own
gold, PhysioNet's), which ``manage.py bench_deid --train`` uses to build a site model
(``DEID_MODEL`` points to it).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pycrfsuite

from engine.deid import lexicon
from engine.deid.spans import NAME, Phi

# Letters and digits, or any one other visible character: "note_demo.pdf" is four tokens
# (the underscore separates, as it does for a reader).
TOKEN = re.compile(r"[^\W_]+|[^\w\s]|_")
OUTSIDE = "O"
# Parameters of the fit; changing them changes the model (and its cache file's name).
PARAMS: dict[str, Any] = {"c1": 0.05, "c2": 0.01, "max_iterations": 80}
# The default model: fewer notes and iterations, so that training it where the shipped file
# is stale stays under a minute of one core.
DEFAULT_PARAMS: dict[str, Any] = {**PARAMS, "max_iterations": 50}
DEFAULT_NOTES = 600
WINDOW = 2


def tokenize(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in TOKEN.finditer(text)]


def _shape(word: str) -> str:
    out: list[str] = []
    for c in word:
        if c.isdigit():
            k = "d"
        elif c.isalpha():
            k = "X" if c.isupper() else "x"
        else:
            k = c
        if not out or out[-1] != k:
            out.append(k)
    return "".join(out)[:6]


def _script(word: str) -> str:
    """The script of a word's first letter ("LATIN", "CYRILLIC", "CJK", "ARABIC", ...)."""
    for c in word:
        if c.isalpha():
            if ord(c) < 0x250:
                return "LATIN"
            try:
                return unicodedata.name(c).split()[0]
            except ValueError:
                return "OTHER"
    return ""


def _identity(word: str, lower: str) -> str:
    """The word itself, for the words a model may learn one by one: numbers, punctuation,
    and the words of the language (function, clinical and dictionary words: "per", "dr",
    "aware"). Any other word is a candidate name, and its identity is withheld: a model
    trained on a corpus learnt its surrogate names ("Radu", "Crosson") rather than where
    names stand, and found 0.99 of the names of the notes it was trained on and 0.88 of
    other patients'."""
    if len(lower) > 20:
        return "<long>"
    if not word.isalpha() or lexicon.is_not_a_name(lower) or lexicon.is_dictionary_word(lower):
        return lower
    return "<cand>"


def _word_features(word: str) -> dict[str, Any]:
    lower = word.lower()
    script = _script(word)
    f: dict[str, Any] = {
        "w": _identity(word, lower),
        "shape": _shape(word),
        "suf3": lower[-3:],
        "pre2": lower[:2],
        "len": min(len(word), 12),
        "title": word[:1].isupper() and word[1:].islower(),
        "upper": word.isupper() and len(word) > 1,
        "lower": word.islower(),
        "digit": word.isdigit(),
        "script": script,
    }
    if script == "LATIN" and word.isalpha():
        f["first"] = lexicon.is_first_name(word)
        f["last"] = lexicon.is_surname(word)
        f["common"] = lexicon.is_common_word(word)
        f["inst"] = lexicon.is_institution_word(word)
    elif script:
        f["foreign"] = True
    return f


def features(text: str, spans: Sequence[tuple[int, int]], rules: Sequence[str]) -> list[dict]:
    """One feature dict per token: the token's own, its neighbours' (within WINDOW), the
    rules' type for it and its neighbours, and where it sits on its line."""
    words = [text[a:b] for a, b in spans]
    own = [_word_features(w) for w in words]
    out = []
    for i, (a, _b) in enumerate(spans):
        f: dict[str, Any] = {"bias": 1.0, "rule": rules[i]}
        f.update(own[i])
        line_start = text.rfind("\n", 0, a) + 1
        f["bol"] = not text[line_start:a].strip()
        for d in range(-WINDOW, WINDOW + 1):
            if d == 0:
                continue
            j = i + d
            if 0 <= j < len(spans):
                other = own[j]
                f[f"{d}:w"] = other["w"]
                f[f"{d}:shape"] = other["shape"]
                f[f"{d}:rule"] = rules[j]
                if abs(d) == 1:
                    for key in ("first", "last", "common", "title", "upper", "lower", "script"):
                        if key in other:
                            f[f"{d}:{key}"] = other[key]
                    gap = text[spans[j][1] : a] if d < 0 else text[spans[i][1] : spans[j][0]]
                    f[f"{d}:nl"] = "\n" in gap
            else:
                f[f"{d}:w"] = "<edge>"
        out.append(f)
    return out


def _rule_labels(spans: Sequence[tuple[int, int]], phi: Iterable[Phi]) -> list[str]:
    return _labels(spans, phi, whole=False)


def _labels(spans: Sequence[tuple[int, int]], phi: Iterable[Phi], *, whole: bool) -> list[str]:
    """Each token's type: the type of a span that covers any of its characters."""
    ordered = sorted(phi)
    labels = []
    k = 0
    for a, b in spans:
        while k < len(ordered) and ordered[k].end <= a:
            k += 1
        label = OUTSIDE
        j = k
        while j < len(ordered) and ordered[j].start < b:
            if ordered[j].end > a:
                label = ordered[j].type
                break
            j += 1
        labels.append(label)
    return labels


def _rules(text: str) -> list[Phi]:
    from engine.deid import recognisers
    from engine.deid.spans import resolve

    return resolve(recognisers.find(text))


def sequence(
    text: str, rules: Sequence[Phi] | None = None
) -> tuple[list[tuple[int, int]], list[dict]]:
    """Tokens and their features; ``rules``: the rules' resolved spans, when already found."""
    spans = tokenize(text)
    found = _rules(text) if rules is None else rules
    return spans, features(text, spans, _rule_labels(spans, found))


def train(
    records: Iterable[tuple[str, Sequence[Phi]]], path: Path, params: dict[str, Any] | None = None
) -> None:
    """Fit a model on (text, gold spans) pairs and write it to ``path``. Deterministic:
    the same records give the same model."""
    trainer = pycrfsuite.Trainer(verbose=False)
    for text, gold in records:
        spans, feats = sequence(text)
        if spans:
            trainer.append(feats, _labels(spans, gold, whole=False))
    trainer.set_params(params or PARAMS)
    trainer.train(str(path))


class Model:
    """A trained model: ``find(text)`` gives its PHI spans."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()  # a CRFsuite tagger is not shared between threads

    def _tagger(self) -> pycrfsuite.Tagger:
        tagger = getattr(self._local, "tagger", None)
        if tagger is None:
            tagger = pycrfsuite.Tagger()
            tagger.open(str(self.path))
            self._local.tagger = tagger
        return tagger

    def find(self, text: str, rules: Sequence[Phi] | None = None) -> list[Phi]:
        spans, feats = sequence(text, rules)
        if not spans:
            return []
        labels = self._tagger().tag(feats)
        return _spans(text, spans, labels)


def _spans(text: str, tokens: Sequence[tuple[int, int]], labels: Sequence[str]) -> list[Phi]:
    """Runs of tokens with one label, on one line, as spans (a name word by word, so each
    gets its own surrogate as the rules' do); punctuation at either end of a run is left out,
    and a run of punctuation alone is no PHI (a surrogate for "," is ",")."""
    out: list[Phi] = []
    run: list[tuple[int, int]] = []
    kind = OUTSIDE

    def close() -> None:
        words = [t for t in run if text[t[0] : t[1]][:1].isalnum()]
        if kind == NAME:
            out.extend(Phi(a, b, NAME, "crf") for a, b in words)
        elif words:
            out.append(Phi(words[0][0], words[-1][1], kind, "crf"))

    for (a, b), label in zip(tokens, labels, strict=True):
        gap = text[run[-1][1] : a] if run else ""
        ends = bool(run) and text[run[-1][0] : run[-1][1]] in ".;" and gap.isspace()
        if run and (label != kind or "\n" in gap or ends):  # a line or a sentence ends a run
            close()
            run = []
        if label != OUTSIDE:
            run.append((a, b))
        kind = label
    if run:
        close()
    return out


_lock = threading.Lock()
_model: Model | None = None
_configured: Path | None = None


def configure(path: str | os.PathLike[str] | None) -> None:
    """Use the model at ``path`` (a site model from ``bench_deid --train``) instead of the
    one trained from the generated notes; None goes back to that one."""
    global _model, _configured
    with _lock:
        _configured = Path(path) if path else None
        _model = None


SHIPPED = Path(__file__).resolve().parent / "data" / "crf-generated.crfsuite"


def fingerprint() -> str:
    """What the default model is made from: the fit's parameters and the code that writes
    the notes and computes the features. The shipped model records it beside itself."""
    from engine.deid import recognisers, synthetic

    digest = hashlib.sha256(repr(sorted(DEFAULT_PARAMS.items())).encode())
    digest.update(str(DEFAULT_NOTES).encode())
    for module in (synthetic, recognisers, lexicon):
        digest.update(Path(module.__file__ or "").read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:16]


def train_default(path: Path) -> None:
    """The default model, from the generated notes, written to ``path`` with its
    fingerprint beside it (``path`` + ".fingerprint")."""
    from engine.deid import synthetic

    path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside, then renamed: another process never reads half a model.
    fd, partial = tempfile.mkstemp(dir=path.parent, suffix=".partial")
    os.close(fd)
    train(synthetic.corpus(count=DEFAULT_NOTES), Path(partial), DEFAULT_PARAMS)
    os.replace(partial, path)
    Path(f"{path}.fingerprint").write_text(fingerprint() + "\n")


def cache_folder() -> Path:
    folder = os.environ.get("VETTED_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or tempfile.gettempdir(), "vetted"
    )
    return Path(folder)


def shipped_is_current() -> bool:
    marker = Path(f"{SHIPPED}.fingerprint")
    return SHIPPED.exists() and marker.exists() and marker.read_text().strip() == fingerprint()


def model() -> Model:
    """The model in use: the configured site model; or the default one, shipped in
    ``data/`` (or, when the code changed since it was trained, trained again from the
    generated notes at first use and kept under the cache folder)."""
    global _model
    with _lock:
        if _model is not None:
            return _model
        if _configured is not None:
            _model = Model(_configured)
        elif shipped_is_current():
            _model = Model(SHIPPED)
        else:
            path = cache_folder() / f"deid-crf-{fingerprint()}.crfsuite"
            if not path.exists():
                train_default(path)
            _model = Model(path)
        return _model


def describe() -> str:
    """Which model is in use, as exports record it (without loading or training it)."""
    return f"site model {_configured.name}" if _configured else "model trained on generated notes"


def find(text: str, rules: Sequence[Phi] | None = None) -> list[Phi]:
    return model().find(text, rules)
