"""Encryption at rest, the operations: unlock, lock, encrypt, decrypt, rekey and git's textconv.

Which notes are encrypted is decided by the privacy rules when a note is written
(`storage.transaction`); these operations set a passphrase up, hold the key, move notes in and
out of encryption on request and re-seal everything under a new key. See docs/encryption.md.
"""

from __future__ import annotations

__all__ = [
    "ATTRIBUTES",
    "DIFF_LINE",
    "decrypt",
    "encrypt",
    "lock",
    "register_textconv",
    "rekey",
    "save_text",
    "textconv",
    "unlock",
]

import hashlib
import hmac
import re
from pathlib import PurePosixPath

from tiered_memory.app import filing, sealed
from tiered_memory.app.api import Empty
from tiered_memory.app.api.crypto import (
    CryptRequest,
    CryptResult,
    Locked_,
    RekeyRequest,
    RekeyResult,
    SavedText,
    SaveTextRequest,
    TextconvRequest,
    TextconvResult,
    UnlockRequest,
    UnlockResult,
)
from tiered_memory.app.memory import Memory
from tiered_memory.errors import BadInput, Locked, NoteNotFound, Tampered
from tiered_memory.index.graph import graph_entry
from tiered_memory.model import envelope, note_ids, sealed_merge
from tiered_memory.model import note as notes
from tiered_memory.model.frontmatter import edit_frontmatter
from tiered_memory.model.merge3 import Sides, merge_file
from tiered_memory.storage import crypto, sealing
from tiered_memory.storage.git import set_config
from tiered_memory.storage.transaction import Transaction
from tiered_memory.storage.vault import merge_driver_command

ATTRIBUTES = ".gitattributes"
DIFF_LINE = "memory/**/*.md diff=tmem"


def _require_mode(memory: Memory) -> None:
    if memory.config.privacy.encrypt != "sensitive":
        raise BadInput("encryption is off: set `privacy.encrypt: sensitive` in tmem.yaml first")


def register_textconv(memory: Memory) -> bool:
    """git shows encrypted notes' plaintext in `git diff` / `git log -p` through `tmem textconv`
    (only while unlocked). Never `cachetextconv`: git would store the plaintext in its notes.
    True when .gitattributes still lacks the line that names the driver."""
    command = merge_driver_command().replace(" merge-driver %O %A %B %P", " textconv")
    set_config(memory.root, 'diff "tmem"', "textconv", command)
    path = memory.abspath(ATTRIBUTES)
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    return DIFF_LINE not in text.splitlines()


def unlock(memory: Memory, request: UnlockRequest) -> UnlockResult:
    _require_mode(memory)
    root = memory.root
    settings = crypto.load_settings(root)
    created = False
    commit = None
    if request.new:
        if settings is not None:
            raise BadInput("encryption is already set up here (tmem rekey changes the passphrase)")
        settings, key = crypto.new_settings(request.passphrase)
        with memory.change("encryption: set up (scrypt key settings, git textconv)") as tx:
            if tx.exists(crypto.SETTINGS):  # another `unlock --new` came first
                raise BadInput("encryption is already set up here (tmem rekey changes the passphrase)")
            crypto.unlocked(root, key)
            tx.write_text(crypto.SETTINGS, crypto.settings_text(settings))
            if register_textconv(memory):
                old = tx.read_text(ATTRIBUTES) if tx.exists(ATTRIBUTES) else ""
                note = "# Encrypted notes: readable diffs while unlocked (tmem textconv).\n"
                tx.write_text(ATTRIBUTES, old.rstrip("\n") + "\n" + note + DIFF_LINE + "\n")
        commit, created = tx.sha, True
    else:
        key = crypto.unlock(root, request.passphrase)
        register_textconv(memory)
    stored = crypto.keyring_store(key) if request.keyring else False
    if request.keyring and not stored:
        memory.warn("no usable OS keyring here: the key is held in memory only")
    return UnlockResult(envelope.key_id(key), created, stored, len(sealed.read_all(memory)), commit)


def lock(memory: Memory, _request: Empty) -> Locked_:
    """Forget the key and mark the vault locked: until `unlock`, no process of it uses a key
    from memory, $TMEM_PASSPHRASE or the keyring (storage.crypto.lock)."""
    sealed.forget_all()
    return Locked_(crypto.lock(memory.root))


def _targets(memory: Memory, request: CryptRequest) -> list[str]:
    if request.all:
        rows = memory.rows().values()
        found = {r.path for r in rows if notes.is_note_path(r.path) and r.path.endswith(".md")}
        # The catalog keeps the notes stored encrypted, and the plain ones the rules seal (a
        # person's note with `sensitive: true` their own git committed), out of its rows.
        found.update(sealed.paths(memory))
        return sorted(found)
    if not request.ref.strip():
        raise BadInput("give a note id or path, or --all")
    return [sealed.resolve(memory, request.ref)]


def _crypt(memory: Memory, request: CryptRequest, encrypt: bool) -> CryptResult:
    _require_mode(memory)
    key = crypto.require_key(memory.root, "encrypting and decrypting notes")
    memory.fresh()
    result = CryptResult()
    renames: dict[str, str] = {}  # decrypted note's path -> the sealed name it had
    verb = "encrypt" if encrypt else "decrypt"
    with memory.change(verb) as tx:
        for rel in _targets(memory, request):
            stored = envelope.is_envelope(tx.read_bytes(rel)[: len(envelope.MAGIC)])
            note = tx.read_note(rel)
            changes: dict[str, object] = {}
            if request.all:  # the rules decide; only notes stored the other way change
                wanted = tx.seals(note)
                if wanted == stored or wanted != encrypt:
                    result.unchanged.append(rel)
                    continue
            else:
                if stored == encrypt and note.meta.get("encrypt") in (encrypt, None):
                    result.unchanged.append(rel)
                    continue
                if note.is_json:
                    # The rules never seal JSON (envelope.should_encrypt), and it has no frontmatter
                    # to hold the choice: renamed, or given a `---` block, it would be neither.
                    raise BadInput(f"{rel}: a JSON file is not stored encrypted; nothing changed")
                # `encrypt: false` only where the rules would seal it again at the next write;
                # elsewhere the `encrypt: true` that `encrypt` wrote goes, as the person had it.
                changes["encrypt"] = True if encrypt else (False if _rules_seal(memory, note) else None)
            restored = None if encrypt or not stored else _name_before(memory, tx, rel, key, note)
            if restored is not None:
                tx.publish(rel)  # before its first write, which journals it
                if PurePosixPath(restored).stem == note.meta.get("title"):
                    changes["title"] = None  # `encrypt` wrote it from the name, which tells it again
            renamed = encrypt and not PurePosixPath(rel).name.startswith("n-")
            if renamed:
                linked = _linked(memory, note)
                if linked and not request.all:
                    raise BadInput(f"{rel}: {linked}: remove them first, or leave it plain")
                if linked:
                    result.skipped[rel] = linked  # the others are encrypted all the same
                    continue
                if note.meta.get("title") in (None, ""):  # an empty `title:` too
                    changes["title"] = note.title  # its name, kept inside the envelope
            # In place: a person's frontmatter keeps its formatting (comments, quoting, key order).
            text = tx.read_text(rel)
            if changes:
                text = edit_frontmatter(text, changes)
            if renamed:
                rel = tx.move(rel, _sealed_name(rel, key, note.id))  # the old name told the title
            tx.write_note(notes.parse(text, rel), text=text)
            if restored is not None:
                # Moved once plain: a sealed note moved is named after nothing (Transaction.move).
                moved = tx.move(rel, restored)
                renames[moved], rel = rel, moved
            result.changed.append(rel)
        if result.skipped and not result.changed:
            raise BadInput(_none_encrypted(result.skipped))
        only = result.changed[0] if len(result.changed) == 1 else ""
        tx.message = f"{verb}: {len(result.changed)} note(s)" + (
            f" ({renames[only]} -> {only})" if only in renames else f" ({only})" if only else ""
        )
    result.commit = tx.sha
    return result


def _rules_seal(memory: Memory, note: notes.Note) -> bool:
    """Whether the privacy rules alone (without the note's own `encrypt:`) seal `note`."""
    rules = memory.config.privacy
    return envelope.should_encrypt(note.path, note.sensitive, rules.encrypt, rules.encrypted_paths)


def _name_before(memory: Memory, tx: Transaction, rel: str, key: bytes, note: notes.Note) -> str | None:
    """The path a note `encrypt` renamed had before, for `decrypt` to give back (None when it is
    not known). A person's note titled by its file name took the name inside its envelope as its
    `title:`, and its sealed name was made from the id that path gave it: the name is the one
    whose id makes the sealed name. Taken meanwhile, the next free name beside it (said in a line)."""
    title = note.meta.get("title")
    path = PurePosixPath(rel)
    if (
        note.meta.get("id") not in (None, "")
        or not _NEUTRAL_NAME.fullmatch(path.stem)
        or not isinstance(title, str)
        or title != title.strip()
        or not title
        or title.startswith(".")
        or any(c in title for c in "/\\\n\r\0")
        or not _may_name_a_file(title + path.suffix)
    ):
        return None
    wanted = path.with_name(f"{title}{path.suffix}").as_posix()
    base = notes.default_id(wanted)
    # Sealed under the id that old path gave it: its default one, or that id settled (model.note_ids).
    ids = (base, note_ids.suffixed(wanted, base), note_ids.suffixed(wanted, base, 32))
    if all(_sealed_name(wanted, key, i) != rel for i in ids):
        return None  # a title of its own, not the name it had
    free, counter = wanted, 2
    while tx.exists(free):
        if counter > _MAX_TAKEN:
            return None  # a folder full of that name's copies: it stays under its sealed name
        free = path.with_name(f"{title}-{counter}{path.suffix}").as_posix()
        counter += 1
    if free != wanted:
        memory.warn(f"{wanted} is taken: the decrypted note {rel} is named {free}")
    return free


_NEUTRAL_NAME = re.compile(r"n-[0-9a-f]{12}")  # the names `_sealed_name` gives
_MAX_TAKEN = 1000  # the `-<n>` names tried beside a taken one
# A file name's bytes on every file system tmem runs on, less room for the `-<n>` of a taken name.
_NAME_BYTES = 255 - len(f"-{_MAX_TAKEN}")
# Characters no file name gets back from an envelope (one another clone's key holder may have
# crafted): control characters and line and bidirectional-text marks, which make a name that
# prints as another one in a terminal, a listing or a commit message.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _may_name_a_file(name: str) -> bool:
    """Whether `name` (a title with its suffix) may be given back as a file's name."""
    return len(name.encode("utf-8")) <= _NAME_BYTES and not _UNPRINTABLE.search(name)


def _linked(memory: Memory, note: notes.Note) -> str:
    """Why `note` cannot be encrypted ("" when it can): an encrypted note is renamed (its name
    would tell its title), so a note others link to by its name would break all those links,
    in Obsidian and in `tmem links`. A note the catalog keeps out of the link graph (a plain
    one the rules will seal) is looked for by the names its text gives it."""
    graph = memory.links()
    found = graph.backlinks(note.path) or graph.links_by_names(
        note.path, graph_entry(note, note.title, note.aliases, ())
    )
    sources = sorted({link.source for link in found})
    if not sources:
        return ""
    shown = ", ".join(sources[:3]) + (f" and {len(sources) - 3} more" if len(sources) > 3 else "")
    return (
        f"{len(sources)} note(s) link to it by its name ({shown}); encrypted, it would be"
        " renamed n-<hex>.md and those links would break"
    )


def _none_encrypted(skipped: dict[str, str]) -> str:
    """`encrypt --all` that could encrypt none of the notes the rules name: one line, the first
    note named with its reason."""
    first, why = next(iter(skipped.items()))
    more = f" (and {len(skipped) - 1} more note(s) linked by name)" if len(skipped) > 1 else ""
    return f"nothing encrypted: {first}: {why}{more}; remove the links, or leave it plain"


def _sealed_name(rel: str, key: bytes, note_id: str) -> str:
    """The neutral name (`n-<12 hex>`) a note is moved to when it is encrypted: made from its id
    with the vault's key, so two clones encrypting the same note name it alike and a sync merges
    the two envelopes as one note (random names made it two notes with one id). The key keeps the
    name from telling the id."""
    digest = hmac.new(key, f"tmem-sealed-name:{note_id}".encode(), hashlib.sha256).hexdigest()[:12]
    path = PurePosixPath(rel)
    return path.with_name(f"n-{digest}{path.suffix}").as_posix()


def encrypt(memory: Memory, request: CryptRequest) -> CryptResult:
    return _crypt(memory, request, True)


def decrypt(memory: Memory, request: CryptRequest) -> CryptResult:
    return _crypt(memory, request, False)


def rekey(memory: Memory, request: RekeyRequest) -> RekeyResult:
    """A new passphrase (new salt, new key): every encrypted note sealed again, one commit."""
    _require_mode(memory)
    root = memory.root
    old = crypto.require_key(root, "rekeying")
    paths = [p for p in sealed.paths(memory)]
    settings, key = crypto.new_settings(request.passphrase)
    with memory.change("encryption: new key") as tx:
        # Read under the lock: each note is sealed again as the last writer left it.
        plain = {rel: envelope.open_envelope(old, rel, tx.read_bytes(rel)) for rel in paths}
        records = _waiting_resealed(tx, paths, old, key)
        tx.exists(crypto.SETTINGS)  # replaced: read with the notes it was the key of
        crypto.remember(root, key)
        try:
            for rel, data in plain.items():
                tx.write_text(rel, data.decode("utf-8"), seal=True)
            for record, packed in records.items():
                tx.write_bytes(record, packed)
            tx.write_text(crypto.SETTINGS, crypto.settings_text(settings))
        except BaseException:
            crypto.remember(root, old)
            raise
        tx.message = f"encryption: new key ({len(plain)} note(s) sealed again)"
    sealed.forget_all()
    return RekeyResult(settings.key_id, len(plain), tx.sha)


def _waiting_resealed(tx: Transaction, paths: list[str], old: bytes, new: bytes) -> dict[str, bytes]:
    """The records of other versions a sync left waiting beside encrypted notes, their envelopes
    sealed again under the new key: left under the old one, `tmem resolve` could never merge them."""
    out: dict[str, bytes] = {}
    for rel in paths:
        record = sealed_merge.conflict_path(rel)
        if not tx.exists(record):
            continue
        try:
            pending = sealed_merge.unpack(tx.read_bytes(record))
        except sealed_merge.BadRecord:
            continue  # not tmem's: left as it is
        again = [
            sealed_merge.Pending(
                None if p.base is None else _resealed(p.base, old, new), _resealed(p.theirs, old, new)
            )
            for p in pending
        ]
        out[record] = sealed_merge.pack(rel, again)
    return out


def _resealed(data: bytes, old: bytes, new: bytes) -> bytes:
    """An envelope sealed again under `new` for the path it was sealed for; a version stored in
    plain text, or one the old key does not open (kept for a person to see), as it is."""
    if not envelope.is_envelope(data):
        return data
    try:
        path = envelope.decode(data).path
        return envelope.seal(new, path, envelope.open_envelope(old, path, data))
    except (envelope.Tampered, envelope.EnvelopeError):
        return data


def textconv(memory: Memory, request: TextconvRequest) -> TextconvResult:
    """What `git diff` shows for a note's bytes: the plaintext while unlocked, else a notice."""
    data = request.text.encode("utf-8")
    if not envelope.is_envelope(data):
        return TextconvResult(request.text, False)
    key = crypto.key_for(memory.root)
    if key is None:
        return TextconvResult("[encrypted note: locked (tmem unlock shows it)]\n", False)
    sealed_with = envelope.decode(data).key_id
    if sealed_with and sealed_with != envelope.key_id(key):
        # A version from before `tmem rekey`: git shows the rest of the history instead of
        # stopping at it ("unable to read files to diff").
        return TextconvResult(f"[encrypted note: sealed under an earlier key ({sealed_with})]\n", False)
    try:
        return TextconvResult(envelope.open_envelope(key, None, data).decode("utf-8"), True)
    except (envelope.Tampered, envelope.EnvelopeError) as exc:
        raise Tampered(str(exc)) from None
    except Locked:
        return TextconvResult("[encrypted note: locked]\n", False)


def save_text(memory: Memory, request: SaveTextRequest) -> SavedText:
    """Write a note a person edited outside the vault (`tmem edit`) through the unit of work.

    The person's text replaces the note as it was when the edit began (`base`); what was written
    to it meanwhile (an agent's update, the daemon's, another command's) is merged in like a
    sync's two versions, with markers and `conflict: true` where both changed the same lines. A
    note moved meanwhile (promoted, archived) is saved where it is now. A plain note keeps the
    person's bytes as typed; an encrypted one (or one the privacy rules now encrypt) is sealed."""
    rel = _current_path(memory, memory.safe_rel(request.path), request.base)
    conflict = False
    with memory.change(f"edit: {rel}") as tx:
        current = tx.read_text(rel) if tx.exists(rel) else None
        text = request.text
        if request.base is not None and current is not None and current != request.base:
            merged = merge_file(request.base, current, text, rel, _EDIT_SIDES)
            text, conflict = merged.text, merged.conflict
        note = notes.parse(text, rel)
        was_sealed = sealing.on_disk(memory.vault, rel)
        if note.parse_warning and (current is None or was_sealed):
            raise BadInput(f"{rel}: {note.parse_warning}; not saved")
        if (
            not note.parse_warning
            and filing.filed_by_tmem(memory.vault, note)
            and text != current
            and not _dated(request)
        ):
            # tmem's own notes are dated by their frontmatter `updated` (model.note_dates).
            text = edit_frontmatter(text, {"updated": memory.now()})
            note = notes.parse(text, rel)
        tx.message = f"edit: {sealing.label(memory.vault, note)}"
        encrypted = not note.parse_warning and tx.seals(note)
        if encrypted:
            tx.write_note(note, overwrite=current is None, text=text)  # as typed, not re-rendered
        else:
            tx.write_text(rel, text, overwrite=current is None)
    if encrypted or was_sealed:
        sealed.forget_all()  # the decrypted copy this process holds is stale
    return SavedText(rel, tx.sha, conflict, encrypted)


def _dated(request: SaveTextRequest) -> bool:
    """Whether the person changed the note's `updated` in the editor: they said when, and it stays."""
    if request.base is None:
        return False
    typed, began = notes.parse(request.text, request.path), notes.parse(request.base, request.path)
    return typed.meta.get("updated") != began.meta.get("updated")


# What the markers of lines both changed say: true wherever the merged note is read later.
_EDIT_SIDES = Sides(ours="written while the note was open in an editor", theirs="the editor's version")


def _current_path(memory: Memory, rel: str, base: str | None) -> str:
    """Where the note an edit began at `rel` is now: there, or where a move meanwhile took it
    (found by the id its text began with). Saving at the old path would make a second copy."""
    if base is None or memory.vault.exists(rel):
        return rel
    began = notes.parse(base, rel)
    if began.parse_warning:
        return rel
    found = _moved(memory, rel, began)
    if found is not None:
        return found
    if sealing.key_set_up(memory.vault):
        # Encrypted meanwhile (`tmem encrypt` here, or on another machine and synced): renamed to
        # the name made from its id with the key, which only the key finds; saved at the old path
        # instead, the person's text would be committed in plain text under the name it hid.
        why = f"saving {rel}, gone from its place since the edit began (encrypted meanwhile?)"
        hidden = _sealed_name(rel, crypto.require_key(memory.root, why), began.id)
        if memory.vault.exists(hidden):
            return hidden
    return rel  # forgotten meanwhile: the person's save brings it back where it was


def _moved(memory: Memory, rel: str, began: notes.Note) -> str | None:
    """Where a move meanwhile took the note `began` (the text an edit began at `rel`), if one did."""
    try:
        found = sealed.resolve(memory, began.id)
    except NoteNotFound:
        return None
    if found == rel or not memory.vault.exists(found):
        return None
    if began.meta.get("id") not in (None, ""):
        return found
    # A person's note without an `id` goes by one made from its path (the catalog keeps it as an
    # alias when the note moves), which a note in another folder may share: the note found is
    # this one if its move recorded where it came from, or it still holds the text the edit began with.
    moved = memory.read_note(found)
    same = moved.meta == began.meta and moved.body == began.body
    return found if same or moved.meta.get("promoted_from") == rel else None
