"""The message catalogs: extract what the code marks for translation, keep each language's .po in step, compile.

    python -m tools.catalogs update      # after changing messages: refresh every .po, compile every .mo
    python -m tools.catalogs check       # what CI runs (tests/tools/test_catalogs.py): exit 1 on any problem

One catalog per area, kept beside the code it translates, in gettext's layout: the core package's in
workshop/i18n/locale/<lang>/LC_MESSAGES/workshop.po, each lab's in workshop/labs/<lab>/locale/<lang>/LC_MESSAGES/
<lab>.po. Messages are what `_()`, `N_()` and `ngettext()` mark (workshop/i18n/__init__.py); Babel extracts them and
writes the files; the runtime reads the compiled .mo with Python's own gettext. The core's catalog also holds the
messages of tasks.py (invoke's tasks, on the host). Python's argparse has a catalog of its own, argparse.po beside
the core's, extracted from the running Python's argparse.py: it keeps the messages of other Python versions too.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from babel.messages import Catalog, extract, mofile, pofile

from workshop import i18n

PACKAGE = Path(__file__).resolve().parents[1] / "workshop"
TASKS = PACKAGE.parent / "tasks.py"  # invoke's tasks: their messages are the core's
TRANSLATED = [lang for lang in i18n.LANGUAGES if lang != i18n.DEFAULT]
# A str.format field, {name}, {0}, {key!r}, {rel:.2g} (not the braces of a dict in a code example), or a
# template's trans-block value, %(name)s
PLACEHOLDER = re.compile(r"{[\w.\[\]]*(?:![rsa])?(?::[^{}]*)?}|%\(\w+\)s")
# Summary templates (*.md.j2): their {% trans %} blocks and _() calls, trimmed as workshop.i18n.templates renders
# them
TEMPLATE_METHOD = "jinja2.ext:babel_extract"
TEMPLATE_OPTIONS = {"extensions": "jinja2.ext.i18n", "trimmed": "true"}
# Each language's plural forms, as GNU gettext declares them (Babel's CLDR default for Spanish has a third form,
# for exact millions, that a number written in digits never needs)
PLURAL_FORMS = {"es": "nplurals=2; plural=(n != 1);"}


@dataclass(frozen=True)
class Area:
    name: str  # the gettext domain: "workshop", "argparse" or a lab's name
    code: Path  # the folder whose .py files it extracts, or the one file
    locale: Path  # its <lang>/LC_MESSAGES/<name>.po folder root
    skip: tuple[str, ...] = ()  # sub-folders of `code` that are areas of their own
    extra: tuple[Path, ...] = ()  # files outside `code` whose messages are this area's
    # keeps messages the code no longer has (argparse: other Pythons' messages)
    keeps_older: bool = False

    def po(self, lang: str) -> Path:
        return self.locale / lang / "LC_MESSAGES" / f"{self.name}.po"

    def mo(self, lang: str) -> Path:
        return self.po(lang).with_suffix(".mo")


def areas() -> list[Area]:
    labs = sorted(p for p in (PACKAGE / "labs").iterdir() if (p / "__init__.py").is_file())
    core = Area("workshop", PACKAGE, i18n.LOCALE_DIR, skip=("labs",), extra=(TASKS,))
    parser = Area(i18n.ARGPARSE_DOMAIN, Path(argparse.__file__), i18n.LOCALE_DIR, keeps_older=True)
    return [core, parser] + [Area(lab.name, lab, lab / "locale") for lab in labs]


def sources(area: Area) -> list[tuple[Path, str, dict]]:
    """(file, Babel's extraction method, its options) for every file of the area that holds messages: its
    Python code (the one file, argparse.py), its summary templates and its extra files (tasks.py)."""
    if area.code.is_file():
        return [(area.code, "python", {})]
    found = [(path, "python", {}) for path in sorted(area.code.rglob("*.py"))]
    templates = sorted(area.code.rglob("*.md.j2"))
    found += [(path, TEMPLATE_METHOD, TEMPLATE_OPTIONS) for path in templates]
    found = [s for s in found if s[0].relative_to(area.code).parts[0] not in area.skip]
    return found + [(path, "python", {}) for path in area.extra]


def extracted(area: Area) -> Catalog:
    """Every message the area's code and templates mark, with where it is (file:line)."""
    template = Catalog(domain=area.name, project="workshop")
    for path, method, options in sources(area):
        with path.open("rb") as f:
            for lineno, message, comments, context in extract.extract(method, f, options=options):
                where = (_shown(path), lineno)
                template.add(message, locations=[where], auto_comments=comments, context=context)
    return template


def _shown(path: Path) -> str:
    """A file as a catalog names it: relative to the repository, or by its name (argparse.py)."""
    return str(
        path.relative_to(PACKAGE.parent) if path.is_relative_to(PACKAGE.parent) else path.name
    )


def read_po(path: Path, lang: str, domain: str) -> Catalog:
    if path.is_file():
        with path.open("rb") as f:
            catalog = pofile.read_po(f, locale=lang, domain=domain)
    else:
        catalog = Catalog(locale=lang, domain=domain, project="workshop")
    if lang in PLURAL_FORMS:
        catalog.mime_headers = [("Plural-Forms", PLURAL_FORMS[lang])]
    return catalog


def compiled(catalog: Catalog) -> bytes:
    buf = io.BytesIO()
    mofile.write_mo(buf, catalog)
    return buf.getvalue()


def update(area: Area, lang: str) -> Catalog:
    """Bring the area's .po up to the code (new messages empty, gone ones dropped) and compile its .mo."""
    template = extracted(area)
    catalog = read_po(area.po(lang), lang, area.name)
    if area.keeps_older:
        for message in catalog:
            if message.id and message.id not in template:
                template.add(message.id, locations=message.locations, context=message.context)
    catalog.update(template, no_fuzzy_matching=True, update_creation_date=False)
    catalog.obsolete.clear()
    area.po(lang).parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    pofile.write_po(buf, catalog, width=100, sort_by_file=True, ignore_obsolete=True)
    area.po(lang).write_bytes(buf.getvalue())
    area.mo(lang).write_bytes(compiled(catalog))
    return catalog


def _string(message) -> str:
    return message.string if isinstance(message.string, str) else "".join(message.string or ())


def _untranslated(message) -> bool:
    """No translation, or a plural message with one of its forms left empty."""
    forms = [message.string] if isinstance(message.string, str) else list(message.string or ())
    return message.fuzzy or not forms or not all(form.strip() for form in forms)


def problems(area: Area, lang: str) -> list[str]:
    """Everything wrong with the area's catalog for `lang`, one line each (empty when all is well)."""
    template = extracted(area)
    if not len(template):
        return []
    where = area.po(lang).relative_to(PACKAGE.parent)
    if not area.po(lang).is_file():
        return [
            f"{where}: missing ({len(template)} messages to translate; run python -m tools.catalogs update)"
        ]
    catalog = read_po(area.po(lang), lang, area.name)
    out = []
    for message in template:
        if not message.id:
            continue
        found = catalog.get(message.id, context=message.context)
        first = message.locations[0]
        label = f"{first[0]}:{first[1]}: {str(message.id)[:60]!r}"
        if found is None:
            out.append(f"{label}: not in {where}")
        elif _untranslated(found):
            out.append(f"{label}: no {lang} translation in {where}")
        elif set(PLACEHOLDER.findall(str(message.id))) != set(PLACEHOLDER.findall(_string(found))):
            out.append(f"{label}: the translation's {{placeholders}} differ from the source's")
    ids = {(m.id, m.context) for m in template}
    out += [
        f"{where}: {str(m.id)[:60]!r} is no longer in the code"
        for m in catalog
        if m.id and (m.id, m.context) not in ids and not area.keeps_older
    ]
    if not area.mo(lang).is_file() or area.mo(lang).read_bytes() != compiled(catalog):
        out.append(
            f"{area.mo(lang).relative_to(PACKAGE.parent)}: not compiled from its .po (run update)"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.catalogs", description=__doc__.splitlines()[0]
    )
    parser.add_argument("action", choices=("update", "check"))
    args = parser.parse_args(argv)
    found = []
    for area in areas():
        for lang in TRANSLATED:
            if args.action == "update" and len(extracted(area)):
                catalog = update(area, lang)
                print(f"{area.po(lang).relative_to(PACKAGE.parent)}: {len(catalog)} messages")
            found += problems(area, lang)
    for line in found:
        print(line, file=sys.stderr)
    if args.action == "check":
        print(
            f"{len(found)} problem(s) in the message catalogs"
            if found
            else "message catalogs: complete"
        )
    return 1 if args.action == "check" and found else 0


if __name__ == "__main__":
    sys.exit(main())
