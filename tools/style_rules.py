"""What the Spanish edition's style guide (theory/style.es.md) bans, as rules a program can check.

Each rule is a regular expression over Spanish prose (code, identifiers, URLs and template tags already blanked
out by tools/style_lint.py), the advice the finding prints, and, for the number rules only, the fix
that `python -m tools.style_lint --fix` applies. What a regular expression cannot see (which "para" is
the verb, a calque that is also a word) stays the editor's: the guide says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from workshop import i18n

GUIDE = "theory/style.es.md"
NBSP = "\u00a0"
SPACES = " \u00a0\u202f"  # a space, a no-break space, a narrow no-break space
# Not inside a word, an identifier or another number: x11 363 kB is 11 then 363 kB
NOT_AFTER = r"(?<![\w.,\u00a0\u202f])"
WORD = r"[^\W\d_]"  # a letter, accented ones included


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern
    advice: str
    fix: Callable[[str], str] | None = None  # the matched text's replacement, for the number rules


def _regrouped(text: str) -> str:
    """A number written with any grouping, rewritten as the guide writes it: 1024, 38 400, 1 118 048.5."""
    integer, dot, fraction = text.partition(".") if "," in text else (text, "", "")
    if "," not in text and text.count(".") > 1:  # 1.118.048: points group, there are no decimals
        integer, dot, fraction = text, "", ""
    digits = re.sub(r"[^\d]", "", integer)
    return i18n.grouped(int(digits), lang="es") + dot + fraction


def _spaced_percent(text: str) -> str:
    return text[:-1] + NBSP + "%"


def _words(*forms: str) -> re.Pattern:
    return re.compile(r"\b(?:" + "|".join(forms) + r")\b", re.IGNORECASE)


NUMBER_RULES = [
    Rule(
        "number grouped with commas",
        re.compile(NOT_AFTER + r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])"),
        "write 1024, 38 400, 1 118 048 (groups of three from five digits, with a no-break space)",
        _regrouped,
    ),
    Rule(
        "number grouped with points",
        re.compile(NOT_AFTER + r"\d{1,3}(?:\.\d{3}){2,}(?![\d.])"),
        "write 1 118 048 (the edition's decimal mark is the point: 1.118.048 reads as a mistake)",
        _regrouped,
    ),
    Rule(
        "digit groups joined by a breakable space",
        re.compile(NOT_AFTER + r"(?:\d{2,3}(?: \d{3})+|\d(?: \d{3}){2,})(?![\d])"),
        "join digit groups with a no-break space (U+00A0) so that no line breaks inside a number",
        _regrouped,
    ),
    Rule(
        "four digits grouped",
        re.compile(NOT_AFTER + r"\d[ \u00a0\u202f]\d{3}(?![\d,.]|[ \u00a0\u202f]\d)"),
        "write four-digit numbers without a space: 1024, 2048",
        _regrouped,
    ),
    Rule(
        "percent sign without its space",
        re.compile(r"(?<![\d.])\d+(?:\.\d+)?%"),
        "write 63 % (a no-break space before %)",
        _spaced_percent,
    ),
]

WORD_RULES = [
    Rule(
        "coger",
        _words(
            r"cog(?:er|e|es|en|emos|éis|ió|ieron|ido|ida|idos|idas|iendo|ía|ían|erá|erán|erlo|erla|erlos)",
            r"coj(?:a|as|an|o|amos)",
        ),
        "tomar (coger is coarse in much of Latin America)",
    ),
    Rule("librería", _words(r"librerías?"), "biblioteca (a librería sells books)"),
    Rule(
        "parar in the present",
        re.compile(
            r"\b(?:se|lo|la|los|las|te|me|nos)\s+paran?\b|\bparan\b|\bparas\b|\bpara\s+ahí\b",
            re.IGNORECASE,
        ),
        "detener (detiene, se detiene): 'para' reads as the preposition",
    ),
    Rule(
        "plantar",
        _words(r"plant(?:a|as|an|ar|amos|ado|ada|ados|adas|ando|e|en|o|ó|aron)"),
        "meter, introducir (errores): plantar bugs is a calque",
    ),
    Rule("juzgar", _words(r"juzg\w*", r"juzgu\w*"), "corregir, evaluar, decidir"),
    Rule(
        "perfilar",
        _words(r"perfil(?:a|as|an|ar|ado|ada|ados|adas|ando|e|en|o|ó)"),
        "medir con el profiler",
    ),
    Rule(
        "informar de",
        _words(r"inform(?:a|an|ar|ará|arán|ó|aron|e|en|amos|ando)\s+(?:de|del|sobre)"),
        "decir, indicar, mostrar",
    ),
    Rule("se cae", _words(r"se\s+ca(?:e|en|yó|yeron|iga|igan|erá)"), "falla, termina con un error"),
    Rule(
        "soportar",
        _words(r"soport(?:a|an|ar|ado|ada|ados|adas|e|en)"),
        "admitir, funcionar con (soportar is to bear: a calque of to support)",
    ),
    Rule(
        "a plural faked with (s)",
        # a word of two or more small letters, alumno(a) (not HTTP(S), not exp(a) in a formula)
        re.compile(r"[a-záéíóúüñ]{2}\((?:s|es|as|os)\)|o\(a\)|\bvez/veces\b"),
        "one form per number: ngettext() in code, a sentence that needs no plural in a document",
    ),
    Rule(
        "gerund as an adjective",
        re.compile(
            r"\b(?:un|una|unos|unas|el|la|los|las)\s+" + WORD + r"+\s+(?:conteniendo|teniendo|"
            r"indicando|mostrando|describiendo|diciendo|llevando|representando|incluyendo|devolviendo)\b",
            re.IGNORECASE,
        ),
        "a relative clause: 'un fichero que contiene', not 'un fichero conteniendo'",
    ),
]

# The guide's genders: el MiniGPT, el GEMM, el kernel, ...; la GPU, la key, la op; BLAS goes with "biblioteca"
MASCULINE_TERMS = (
    "MiniGPT|GEMM|kernel|survey|batch|rank|softmax|checkpoint|buffer|bucket|pipeline|profiler|grid|"
    "forward|backward|shard|wrapper|stub|dispatcher|LM head|all-reduce|graph break"
)
FEMININE_TERMS = "GPU|CPU|key|dispatch key|custom op|op|IR"
GENDER_RULES = [
    Rule(
        "gender of a kept term",
        re.compile(
            rf"\b(?:la|una|las|unas|esta|esa)\s+(?:{MASCULINE_TERMS})s?\b"
            rf"|\b(?:el|un|los|unos|este|ese)\s+(?:{FEMININE_TERMS})s?\b"
            r"|\b(?:el|un|una|la)\s+BLAS\b|\bN\s+pequeña\b",
        ),
        "el MiniGPT, el GEMM, el kernel; la GPU, la key, la op; una biblioteca BLAS; un N pequeño",
    ),
    Rule(
        "'la mano' as a noun",
        re.compile(r"\bmano\s+contra\b|\bla\s+mano\s+y\b|\bentre\s+la\s+mano\b", re.IGNORECASE),
        "los gradientes a mano frente a autograd",
    ),
]

TERM_RULES = [
    Rule("loss", _words(r"loss(?:es)?"), "pérdida"),
    Rule("accuracy", _words(r"accuracy"), "tasa de acierto"),
    Rule("Definition of Done", _words(r"definition\s+of\s+done"), "la definición de terminado"),
    Rule("batch step", _words(r"batch\s+steps?"), "paso (de entrenamiento)"),
    Rule("job", _words(r"jobs?"), "trabajo (de Slurm)"),
    Rule("schema", _words(r"schemas?"), "esquema"),
    Rule("launch grid", _words(r"launch\s+grids?"), "el grid de lanzamiento"),
    Rule(
        "the workshop's name",
        _words(r"interioridades", r"tripas"),
        "el taller de PyTorch por dentro",
    ),
]

STATUS_RULES = [
    Rule(
        "English status word",
        re.compile(
            r"\b(?:PASS(?:ED)?|FAIL(?:ED|ING)?|TODO|passed|failed|passing|failing|ok|OK)\b"
            r"|\bnot (?:started|graded|checked yet)\b"
        ),
        "superado / no superado / sin empezar / sin corregir",
    ),
    Rule(
        "status word outside the vocabulary",
        re.compile(r"\b(?:FALLO|PENDIENTE|SUPERAD[OA]|APROBADO|SUSPENSO)\b"),
        "superado / no superado / sin empezar / sin corregir, in lower case",
    ),
]

RULES = NUMBER_RULES + WORD_RULES + GENDER_RULES + TERM_RULES + STATUS_RULES

# English words that are never Spanish nor a term the glossary keeps: two of them in one line of Spanish
# prose make an English sentence. ("a", "no", "has", "in", "per", "via" are Spanish too, or start a kept term.)
# fmt: off
ENGLISH = frozenset({
    "the", "of", "and", "is", "are", "was", "were", "with", "from", "this", "that", "these", "those", "not",
    "for", "to", "by", "which", "when", "its", "it", "have", "be", "been", "will", "would", "should",
    "could", "into", "than", "then", "what", "where", "your", "you", "their", "there", "here", "our", "an",
    "at", "on", "or", "but", "if", "can", "must", "does", "did", "each", "every", "only", "one", "yet",
    "any",
})
# fmt: on
ENGLISH_WORD = re.compile(r"[A-Za-z]+(?:[-'][A-Za-z]+)*")


def english_words(prose: str) -> set[str]:
    """The distinct English function words of a piece of prose (hyphenated terms, in-place, count as one)."""
    return {w.lower() for w in ENGLISH_WORD.findall(prose)} & ENGLISH
