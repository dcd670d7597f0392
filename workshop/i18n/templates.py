"""A lab's summary.md from a Jinja2 template beside its code: the prose is the template's, every number the run's.

One template for every language: its prose sits in `{% trans %}` blocks (jinja2.ext.i18n), which the message
catalogs translate like any `_()` in Python (python -m tools.catalogs extracts them into the lab's
catalog), so a translation shares the template's structure instead of repeating every tag. A block names the
values it shows, formatted where it opens:

    {% trans n=prompts, accuracy=accuracy | percent(2) %}Prompt accuracy on {{ n }} prompts: **{{ accuracy }}**.
    {% endtrans %}

Blocks are trimmed (their line breaks and indentation become single spaces), so a message is one line whatever the
template's wrapping; a closing `{% endtrans +%}` keeps the line break after it (trim_blocks would take it), an
opening `{%+ trans %}` the indentation before it (a list item's second line). A short word whose translation
depends on where it stands takes a context: `{% trans "sample" %}ok{% endtrans %}`, `pgettext("sample", "ok")`. A
prose value the code marks with N_() is shown as `{{ _(value) }}`. Undefined values are errors (StrictUndefined),
so a template cannot print a blank where a figure belongs. A sentence that explains a mechanism sits inside `{% if
%}` on the measured condition that shows it.

A template has no translated twin (tests/docs/test_translations.py fails on a `summary.es.md.j2`): a part shared by
two pages is a template of its own (`{% include "side_by_side.md.j2" %}`), translated the same way.
"""

from __future__ import annotations

from pathlib import Path

import jinja2

from workshop import i18n

SOURCE = "summary.md.j2"


def human_bytes(n: float) -> str:
    """1.2 KiB, 3.4 MiB: byte counts as people read them."""
    for unit in ("B", "KiB", "MiB"):
        if abs(n) < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def percent(fraction: float, digits: int = 0, lang: str = i18n.DEFAULT) -> str:
    """63% in English; 63 % in Spanish, a no-break space before the sign (theory/style.es.md)."""
    return f"{100 * fraction:.{digits}f}" + ("\u00a0%" if lang == "es" else "%")


def render(folder: Path, lang: str, values: dict, source: str = SOURCE) -> str:
    """Render `source` from `folder` with `values`, its prose in `lang`."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # Markdown, not HTML
        extensions=["jinja2.ext.i18n"],
    )
    env.policies["ext.i18n.trimmed"] = True  # as catalogs.py extracts them: TEMPLATE_OPTIONS
    env.filters.update(
        # {{ error | sci }}: 1.2e-07, errors and tolerances
        sci=lambda value, digits=1: f"{value:.{digits}e}",
        # {{ x | num }}: up to `digits` significant digits, 0.0123, 4.56, 1.23e+04
        num=lambda value, digits=3: f"{value:.{digits}g}",
        bytes=human_bytes,
        # {{ n | grouped }}: thousands grouped as `lang` writes them (1,118,048 / 1 118 048), never "{:,}"
        grouped=lambda value, decimals=0: i18n.grouped(value, decimals, lang),
        percent=lambda fraction, digits=0: percent(fraction, digits, lang),
    )
    env.install_gettext_translations(i18n.translation(lang), newstyle=False)  # also _()
    return env.get_template(source).render(**values)
