"""The learner's language: English (the source) or Spanish, chosen by --lang or by the locale.

Messages in Python go through `_()`, GNU gettext's convention, with `str.format` placeholders so that a
translation may move them: `_("{lab} passed").format(lab=name)`, never an f-string inside `_()`. The catalogs
live in workshop/locale/<lang>/LC_MESSAGES/workshop.mo; a message with no translation stays English.
Documents (handouts, theory, summary templates) are translated as whole files beside their source instead.
"""

from __future__ import annotations

import gettext
import os
from pathlib import Path

LANGUAGES = ("en", "es")
DEFAULT = "en"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "workshop"

_translation: gettext.NullTranslations = gettext.NullTranslations()
_language = DEFAULT


def detect(environ: dict[str, str] | None = None) -> str:
    """The language the locale asks for: the first of LC_ALL, LC_MESSAGES, LANG that is set, as POSIX reads
    them; Spanish when it starts with 'es' (es_ES.UTF-8, es_MX, es), English otherwise."""
    environ = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(name, "")
        if value:
            return "es" if value.lower().startswith("es") else DEFAULT
    return DEFAULT


def set_language(lang: str | None) -> str:
    """Use `lang` (None: the locale's) for every later `_()`; returns the language in use."""
    global _translation, _language
    lang = lang or detect()
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {lang!r}; choose one of {', '.join(LANGUAGES)}")
    _translation = gettext.translation(DOMAIN, LOCALE_DIR, languages=[lang], fallback=True)
    _language = lang
    return lang


def language() -> str:
    return _language


def _(message: str) -> str:
    """The message in the language in use (itself where the catalog has no translation)."""
    return _translation.gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return _translation.ngettext(singular, plural, n)
