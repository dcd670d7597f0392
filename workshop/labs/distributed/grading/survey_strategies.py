"""Does a survey tell the four strategies apart, and say of each what is true of it? Each must be named in
sentences of prose about it alone that say what each rank holds and what crosses the wire, checked against that
strategy's own facts:

- what each rank holds: its own kind of holding (DDP a replica, FSDP a shard, tensor parallel a slice of each
  matrix, pipeline parallel a stage of layers), and none of another strategy's (`holds_wrong`);
- what crosses the wire: its collectives, each with what it carries (`carries`: FSDP all-gathers parameters and
  reduce-scatters gradients), the pairs in `required` said, and no pair it does not make (a tensor-parallel
  section that sends activations to the next stage describes pipeline parallelism; an FSDP section that
  all-gathers gradients has its roles swapped).

A sentence says "collective of X" when X (parameters, gradients, activations) follows the collective within
WINDOW words of content ("all-gathers the parameters", "un all-reduce de cada bucket de gradientes"), or comes
before it where the collective is the means or the passive ("activations travel by send and recv", "the
gradients are all-reduced"). A negated collective ("does not all-reduce", "sin all-reduce") claims nothing.

Every pattern has an English half and a Spanish half (after the `|` that starts a line's Spanish): a learner
writes in either language, and the Spanish texts keep in English what practitioners keep (DDP, shard, rank,
all-reduce, all-gather, reduce-scatter, pipeline, send/recv), as theory/glossary.es.md says. A survey's grade
does not depend on the language the run speaks.
"""

from __future__ import annotations

import re

from workshop.i18n import N_, _
from workshop.labs.distributed.grading.survey_text import sentences

# What a collective can carry, by the words that name it
OBJECTS = {
    "parameters": r"param|parámetr|weight|^pes[oa]s?$",
    "gradients": r"^grad",
    "activations": r"activa|output|partial|^salida|parcial",
}
OBJECT_NAMES = {
    "parameters": N_("parameters"),
    "gradients": N_("gradients"),
    "activations": N_("activations"),
}
COLLECTIVES = {  # kind -> a token that names it (after SPELLINGS)
    "all-reduce": r"^all-reduc",
    "all-gather": r"^all-gather",
    "reduce-scatter": r"^reduce-scatter",
    "send/recv": r"^send|^recv|^receiv|^point-to-point|^env[ií]|^recib|^punto-a-punto",
}
SPELLINGS = [  # one token per collective however it is written
    (r"all[- ]?reduc", "all-reduc"),
    (r"all[- ]?gather", "all-gather"),
    (r"reduce[- ]?scatter", "reduce-scatter"),
    (r"point[- ]to[- ]point", "point-to-point"),
    (r"punto a punto", "punto-a-punto"),
]
# Words that do not count towards WINDOW: articles, possessives, quantifiers, "of"
FILLER = frozenset(
    "the a an of its their each every all and or one this that these those it to"
    "|el la los las lo un una unos unas de del al su sus cada y o que se".replace("|", " ").split()
)
NEGATION = frozenset(
    "not no never nor without instead rather|sin nunca ni".replace("|", " ").split()
)
MEANS = frozenset("by with through via using|con mediante por vía".replace("|", " ").split())
WINDOW = 3


# A strategy as the survey is graded on it, a dict: its name (shown as _(name): the prose names are marked N_()),
# names (a regex that names it), holds (a regex for its own kind of holding: one of its sentences must say it),
# holds_wrong (a regex for a holding that is another strategy's) and holds_why (the message for it), carries
# (collective -> what it carries in this strategy), required ((collective, what it carries) the survey must say),
# truth (what crosses the wire, said right: the message for a wrong pair)
Strategy = dict


DATA_PARALLEL = r"\bDDP\b|DistributedDataParallel|(?<!sharded )\bdata[- ]parallel"
STAGES = r"\bstages?\b|\betapas?\b|consecutive (?:blocks|layers)|(?:bloques|capas) consecutiv"
STRATEGIES = (
    dict(
        name="DDP",  # kept in English in both languages, like FSDP
        names=DATA_PARALLEL
        + r"|paralelismo de datos(?! (?:totalmente )?(?:repartido|fragmentado))",
        holds=r"replica|whole|entire|full copy|every parameter|all (?:the |its )?param|everything"
        r"|réplica|enter[oa]|complet[oa]|una copia|todos los parámetros|todo el (?:modelo|estado)",
        holds_wrong=r"(?<!not )\bshards?\s+(?:the\s+|its\s+)?(?:param|weight|model|gradient|optimi)"
        r"|(?<!no )\b(?:reparte|fragmenta|divide|trocea)\s+(?:en\s+shards\s+)?(?:los\s+|las\s+|el\s+|sus?\s+)?"
        r"(?:parámetro|peso|modelo|gradiente|estado|optimizador)|" + STAGES,
        holds_why=N_(
            "DDP replicates the parameters, gradients and optimizer state; sharding them is FSDP"
        ),
        carries={"all-reduce": frozenset({"gradients"})},
        required=(("all-reduce", "gradients"),),
        truth=N_("DDP all-reduces the gradients"),
    ),
    dict(
        name="FSDP",
        names=r"\bFSDP2?\b|fully[- ]sharded|paralelismo de datos (?:totalmente )?(?:repartido|fragmentado)",
        holds=r"shard|1/N|slice|a part|its part|fraction"
        r"|trozo|porción|fragmento|fracción|parte|repart[ei]",
        holds_wrong=r"replica|full copy|whole model|réplica|copia completa|modelo entero|" + STAGES,
        holds_why=N_(
            "FSDP keeps a shard of each parameter, gradient and optimizer state, not a replica"
        ),
        carries={
            "all-gather": frozenset({"parameters"}),
            "reduce-scatter": frozenset({"gradients"}),
        },
        required=(("all-gather", "parameters"), ("reduce-scatter", "gradients")),
        truth=N_(
            "FSDP all-gathers the parameters and reduce-scatters the gradients; it does not all-reduce"
        ),
    ),
    dict(
        name=N_("tensor parallel"),
        names=r"\bTP\b|tensor[- ]parallel|paralelismo (?:de tensores|tensorial)",
        holds=r"slice|shard|column|row|split|a part|its part"
        r"|trozo|porción|fila|parte|divid[ei]|repart[ei]|cort[ae]",
        holds_wrong=STAGES,
        holds_why=N_(
            "a tensor-parallel rank holds a slice of every layer's matrices; a stage of layers is pipeline "
            "parallel"
        ),
        carries={"all-reduce": frozenset({"activations", "gradients"})},
        required=(("all-reduce", "activations"),),
        truth=N_(
            "tensor parallel all-reduces activations in forward and their gradients in backward"
        ),
    ),
    dict(
        name=N_("pipeline parallel"),
        names=r"\bPP\b|pipeline",
        holds=r"stage|layers|blocks|etapa|capas|bloques",
        holds_wrong=r"\bcolumns?\b|\brows?\b|slices? of (?:each|every) (?:matrix|layer)|columnas?|\bfilas?\b",
        holds_why=N_(
            "a pipeline rank holds whole layers, a stage of them; slicing each matrix is tensor parallel"
        ),
        carries={"send/recv": frozenset({"activations", "gradients"})},
        required=(("send/recv", "activations"),),
        truth=N_("pipeline parallel sends activations to the next stage and their gradients back"),
    ),
)


def named(piece: str) -> set[str]:
    return {s["name"] for s in STRATEGIES if re.search(s["names"], piece, re.I)}


def tokens(clause: str) -> list[str]:
    for pattern, spelling in SPELLINGS:
        clause = re.sub(pattern, spelling, clause, flags=re.I)
    return [t.lower() for t in re.findall(r"[\w'’/-]+", clause)]


def kind(token: str, table: dict[str, str]) -> str | None:
    return next((k for k, pattern in table.items() if re.search(pattern, token)), None)


def carried(words: list[str], i: int) -> set[str]:
    """What the collective at words[i] carries: the objects within WINDOW words of content after it, or,
    where it is the means or a passive (by send, all-reduced), before it; none past another collective."""
    passive = words[i].endswith(("ed", "ados", "adas", "ado", "ada"))
    before = [w for w in reversed(words[:i]) if w not in FILLER]
    steps = [range(i + 1, len(words))]
    if passive or (before and before[0] in MEANS):
        steps.append(range(i - 1, -1, -1))
    for indices in steps:
        content = []  # the words of content within WINDOW, up to another collective
        for j in indices:
            if kind(words[j], COLLECTIVES) or len(content) >= WINDOW:
                break
            if words[j] not in FILLER and words[j] not in MEANS:
                content.append(words[j])
        if found := {obj for word in content if (obj := kind(word, OBJECTS))}:
            return found
    return set()


def negated(before: list[str]) -> bool:
    return any(w in NEGATION or w.endswith(("n't", "n’t")) for w in before)


def claims(sentence: str) -> list[tuple[str, set[str]]]:
    """(collective, what the sentence says it carries) for each collective the sentence does not negate."""
    return [
        (collective, carried(words, i))
        for clause in re.split(r"[;:()\[\]]", sentence)
        for words in (tokens(clause),)
        for i, word in enumerate(words)
        if (collective := kind(word, COLLECTIVES)) and not negated(words[max(0, i - 3) : i])
    ]


def problems_of(s: Strategy, own: list[str]) -> list[str]:
    """What the strategy's own sentences say wrongly of it (first: that names the mistake), then what they do
    not say."""
    said = [c for p in own for c in claims(p)]
    wrong = sorted(
        {(c, o) for c, objects in said for o in objects if o not in s["carries"].get(c, ())}
    )
    problems = [
        _("says {collective} of {what}: {truth}").format(
            collective=c, what=_(OBJECT_NAMES[o]), truth=_(s["truth"])
        )
        for c, o in wrong
    ]
    if any(re.search(s["holds_wrong"], p, re.I) for p in own):
        problems.append(_(s["holds_why"]))
    if not any(re.search(s["holds"], p, re.I) for p in own):
        problems.append(_("what each rank holds"))
    for collective, obj in s["required"]:
        if not any(c == collective for c, _objects in said):
            problems.append(_("what is communicated ({collective})").format(collective=collective))
        elif not any(c == collective and obj in objects for c, objects in said):
            problems.append(
                _("what the {collective} carries ({what})").format(
                    collective=collective, what=_(OBJECT_NAMES[obj])
                )
            )
    return problems


def strategy_problems(text: str) -> dict[str, list[str]]:
    """Strategy -> what the survey does not say about it alone, or says wrongly (empty: it is named and
    distinguished). A sentence is about the strategies it names, or, naming none, about the one its section's
    heading names."""
    about = [(named(sentence) or named(heading), sentence) for heading, sentence in sentences(text)]
    return {
        s["name"]: problems_of(s, own)
        if (own := [sentence for names, sentence in about if names == {s["name"]}])
        else [_("no sentence is about {strategy} alone").format(strategy=_(s["name"]))]
        for s in STRATEGIES
    }
