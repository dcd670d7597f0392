"""Does a survey tell the four strategies apart? Each must be named in sentences of prose about it alone that
say what each rank holds and what is communicated, and none may say what belongs to another strategy.

Every pattern has an English half and a Spanish half (after the `|` that starts a line's Spanish): a learner
writes in either language, and the Spanish texts keep in English what practitioners keep (DDP, shard, rank,
all-reduce, all-gather, reduce-scatter, pipeline, send/recv), as theory/glossary.es.md says. A survey's grade
does not depend on the language the run speaks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workshop.i18n import N_, _
from workshop.labs.distributed.survey_text import sentences


@dataclass(frozen=True)
class Strategy:
    name: str  # shown as _(name): the prose names are marked N_()
    names: str  # a regex that names it
    holds: str  # a regex for what each rank holds
    talks: tuple[tuple[str, str], ...]  # (regex, name) of what is communicated: each must appear
    wrong: str = ""  # a regex for a statement that confuses it with another strategy
    wrong_why: str = ""


STRATEGIES = (
    Strategy(
        "DDP",  # kept in English in both languages, like FSDP
        r"\bDDP\b|DistributedDataParallel|(?<!sharded )\bdata[- ]parallel"
        r"|paralelismo de datos(?! (?:totalmente )?(?:repartido|fragmentado))",
        r"replica|whole|entire|full copy|every parameter|all (?:the |its )?param|everything"
        r"|réplica|enter[oa]|complet[oa]|una copia|todos los parámetros|todo el (?:modelo|estado)",
        ((r"all-?reduce", "all-reduce"),),
        r"(?<!not )\bshards?\s+(?:the\s+|its\s+)?(?:param|weight|model|gradient|optimi)"
        r"|(?<!no )\b(?:reparte|fragmenta|divide|trocea)\s+(?:en\s+shards\s+)?(?:los\s+|las\s+|el\s+|sus?\s+)?"
        r"(?:parámetro|peso|modelo|gradiente|estado|optimizador)",
        N_("DDP replicates the parameters, gradients and optimizer state; sharding them is FSDP"),
    ),
    Strategy(
        "FSDP",
        r"\bFSDP2?\b|fully[- ]sharded|paralelismo de datos (?:totalmente )?(?:repartido|fragmentado)",
        r"shard|1/N|slice|a part|its part|fraction"
        r"|trozo|porción|fragmento|fracción|parte|repart[ei]",
        ((r"all-?gather", "all-gather"), (r"reduce-?scatter", "reduce-scatter")),
        r"(?<!not )\ball-?reduces?\s+(?:the\s+|its\s+)?(?:gradient|param)"
        r"|(?<!no hace un )(?<!no aplica un )\ball-?reduces?\s+(?:de\s+|a\s+)?(?:los\s+|sus\s+)?"
        r"(?:gradiente|parámetro)",
        N_("FSDP does not all-reduce: it all-gathers parameters and reduce-scatters gradients"),
    ),
    Strategy(
        N_("tensor parallel"),
        r"\bTP\b|tensor[- ]parallel|paralelismo (?:de tensores|tensorial)",
        r"slice|shard|column|row|split|a part|its part"
        r"|trozo|porción|fila|parte|divid[ei]|repart[ei]|cort[ae]",
        ((r"all-?reduce", "all-reduce"),),
    ),
    Strategy(
        N_("pipeline parallel"),
        r"\bPP\b|pipeline",
        r"stage|layers|blocks|etapa|capas|bloques",
        ((r"\bsend|\brecv|\breceiv|point-to-point|\benv[ií]|\brecib|punto a punto", "send/recv"),),
    ),
)


def named(piece: str) -> set[str]:
    return {s.name for s in STRATEGIES if re.search(s.names, piece, re.I)}


def strategy_problems(text: str) -> dict[str, list[str]]:
    """Strategy -> what the survey does not say about it alone (empty: it is named and distinguished). A
    sentence is about the strategies it names, or, naming none, about the one its section's heading names."""
    about = [(named(sentence) or named(heading), sentence) for heading, sentence in sentences(text)]
    problems = {}
    for s in STRATEGIES:
        own = [sentence for names, sentence in about if names == {s.name}]
        missing = []
        if not own:
            missing.append(_("no sentence is about {strategy} alone").format(strategy=_(s.name)))
        else:
            if not any(re.search(s.holds, p, re.I) for p in own):
                missing.append(_("what each rank holds"))
            missing += [
                _("what is communicated ({collective})").format(collective=name)
                for pattern, name in s.talks
                if not any(re.search(pattern, p, re.I) for p in own)
            ]
            if s.wrong and any(re.search(s.wrong, p, re.I) for p in own):
                missing.append(_(s.wrong_why))
        problems[s.name] = missing
    return problems
