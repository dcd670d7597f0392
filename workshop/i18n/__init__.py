"""The learner's language: English (the source) or Spanish, chosen by --lang or by the locale.

Messages in Python go through `_()`, GNU gettext's convention, with `str.format` placeholders so that a
translation may move them: `_("{lab} passed").format(lab=name)`, never an f-string inside `_()`. A message
defined where the language is not known yet (a module constant, an exercise's statement) is marked with
`N_()` and translated with `_()` where it is shown. The catalogs sit beside the code they translate
(tools/catalogs.py keeps them): workshop/i18n/locale/<lang>/LC_MESSAGES/workshop.mo for the package, and
workshop/labs/<lab>/locale/<lang>/LC_MESSAGES/<lab>.mo for each lab; a message with no translation stays
English. Documents (handouts, theory) are translated as whole files beside their source; a summary template's
{% trans %} blocks go through the lab's catalog (workshop/i18n/templates.py).
A message that counts goes through `ngettext(singular, plural, n)` (the catalogs declare Spanish's two plural
forms), never "exercise(s)"; a number for people to read through `grouped()` (theory/style.es.md: 1024,
38 400). Python's argparse looks its own text up with gettext too: its catalog (argparse.po, beside the
package's) is installed with the language, so usage lines, option lists and argparse's errors follow it.

This module imports nothing of the workshop (tasks.py imports it on a host without the workshop's packages).

The language: --lang, else WORKSHOP_LANG, else the locale (LC_ALL, LC_MESSAGES, LANG), else English.
"""

from __future__ import annotations

import argparse
import contextlib
import gettext
import os
from pathlib import Path

LANGUAGES = ("en", "es")
DEFAULT = "en"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
# each lab's folder: its catalogs (<lab>/locale/), its handouts
LABS_DIR = Path(__file__).resolve().parents[1] / "labs"
DOMAIN = "workshop"
ARGPARSE_DOMAIN = "argparse"  # Python's argparse's own messages, in the package's locale folder
# language -> (what separates its groups of three digits, the longest integer part written without grouping).
# Spanish groups the digits of numbers of five or more digits in threes, with a space that never breaks a line
# (RAE, Ortografía 2010; ISO 80000-1): 38 400, 1 118 048; not 1024.
GROUPING = {"en": (",", 3), "es": ("\u00a0", 4)}

_translation: gettext.NullTranslations = gettext.NullTranslations()
_language = DEFAULT


def detect(environ: dict[str, str] | None = None) -> str:
    """The language asked for: the first of WORKSHOP_LANG, LC_ALL, LC_MESSAGES, LANG that is set (POSIX's
    order, with the workshop's own variable first): Spanish when it starts with 'es' (es, es_ES.UTF-8, es_MX),
    else English. WORKSHOP_LANG takes a locale name too: compose passes the host's LANG through it."""
    environ = os.environ if environ is None else environ
    names = ("WORKSHOP_LANG", "LC_ALL", "LC_MESSAGES", "LANG")
    value = next((environ[name] for name in names if environ.get(name)), "")
    return "es" if value.lower().startswith("es") else DEFAULT


def set_language(lang: str | None) -> None:
    """Use `lang` (None: the locale's) for every later `_()`."""
    global _translation, _language
    lang = lang or detect()
    _translation = translation(lang)
    _language = lang
    # argparse calls gettext's module-level functions, bound when it was imported, in gettext's global domain
    # and with the environment's language: the workshop's language is --lang's, so argparse gets its lookups.
    argparse._ = _translation.gettext
    argparse.ngettext = _translation.ngettext


def translation(lang: str) -> gettext.NullTranslations:
    """The catalogs of `lang`: the package's, then each lab's (a message none translates stays English)."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; choose one of {', '.join(LANGUAGES)}")
    found = gettext.translation(DOMAIN, LOCALE_DIR, languages=[lang], fallback=True)
    found.add_fallback(
        gettext.translation(ARGPARSE_DOMAIN, LOCALE_DIR, languages=[lang], fallback=True)
    )
    for lab_locale in sorted(LABS_DIR.glob("*/locale")):  # a lab's domain is its name
        found.add_fallback(
            gettext.translation(lab_locale.parent.name, lab_locale, languages=[lang], fallback=True)
        )
    return found


def language() -> str:
    return _language


@contextlib.contextmanager
def using(lang: str):
    """Within: messages in `lang` (a report in its run's language); the language in use before, afterwards."""
    before = _language
    set_language(lang)
    try:
        yield lang
    finally:
        set_language(before)


def _(message: str) -> str:
    """The message in the language in use (itself where the catalog has no translation)."""
    return _translation.gettext(message)


def N_(message: str) -> str:
    """Marks a message for translation where it is defined; `_()` translates it where it is shown."""
    return message


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or the plural message for `n`, in the language in use: ngettext("{n} exercise passing",
    "{n} exercises passing", n).format(n=n)."""
    return _translation.ngettext(singular, plural, n)


def grouped(number: float, decimals: int = 0, lang: str | None = None) -> str:
    """`number` for people to read, with `decimals` decimals and its thousands grouped as `lang` (default: the
    language in use) writes them: 1,118,048 and 1,024 in English; 1 118 048 and 1024 in Spanish (the space a
    no-break space). The decimal mark is a point in both editions, as Python and PyTorch print it."""
    lang = lang or _language
    integer, dot, fraction = f"{number:,.{decimals}f}".partition(".")
    separator, ungrouped = GROUPING[lang]
    digits = len(integer.lstrip("-").replace(",", ""))
    return integer.replace(",", separator if digits > ungrouped else "") + dot + fraction
