"""The survey graded as fairly in Spanish as in English: a Spanish survey (Spanish words for what a rank holds and
what travels, figures with a decimal comma and points between thousands) passes, the English wrong surveys'
Spanish equivalents fail with the same checks, the Spanish model answer passes the grading the English one
does, and a survey's grade does not depend on the language the run speaks. In this process, against a committed
run's figures (no processes)."""

from __future__ import annotations

import pytest

from tests.distributed.test_exercises import RUN, by, failed, grade_survey, tables
from tests.distributed.test_exercises import WRONG_SURVEYS as ENGLISH_WRONG_SURVEYS
from workshop import i18n
from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.distributed import figure_rows
from workshop.labs.distributed.grading import survey, survey_text


@pytest.fixture
def ctx(tmp_path):
    return LabContext("distributed", tmp_path, RunOptions("cpu", RUN[0]["n"], 0))


@pytest.fixture
def spanish():
    """Messages in Spanish for the test, English again after it."""
    i18n.set_language("es")
    yield
    i18n.set_language("en")


def mb(x: float) -> str:
    """3,35 MB: a decimal comma, as a Spanish text writes it."""
    return f"{x / 1e6:.2f} MB".replace(".", ",")


def grouped(n: int) -> str:
    """1.122.144 B: points between thousands."""
    return f"{n:,} B".replace(",", ".")


def good_survey() -> str:
    """A Spanish survey that passes: each strategy in sentences of its own, with this run's figures."""
    ddp, fsdp, tp, gpipe = by("ddp"), by("fsdp"), by("tp"), by("gpipe")
    filler = " ".join(
        ["Medido en mi propia máquina, cada número de abajo sale de las cifras de la ejecución."]
        * 13
    )
    return f"""# Mi survey

{filler}

## DDP

DDP guarda una réplica completa del modelo en cada rank: {mb(ddp["state_bytes_per_rank"])} de parámetros, gradientes
y momento. En el backward hace un all-reduce de los gradientes, {grouped(ddp["comm_bytes"])} de buffers por paso.

## FSDP

FSDP guarda un shard de cada parámetro en cada rank, {mb(fsdp["state_bytes_per_rank"])} aquí. Tiene que hacer un
all-gather de los parámetros antes de que se ejecute cada unidad y un reduce-scatter de los gradientes,
{mb(fsdp["comm_bytes"])} de buffers.

## Paralelismo de tensores

El paralelismo de tensores parte cada matriz grande por columnas o por filas, así que un rank guarda
{mb(tp["state_bytes_per_rank"])}.
¿Y después? Cada bloque espera a un all-reduce de sus activaciones, en el forward y en el backward.

## Paralelismo de pipeline

Con el paralelismo de pipeline, cada rank recibe una etapa de bloques. Las activaciones viajan con send y recv entre
vecinos; mi ejecución estuvo ociosa un {100 * gpipe["bubble"]:.0f} % del paso con GPipe.
"""


def test_a_good_spanish_survey_passes(ctx, tmp_path):
    text = good_survey()
    assert survey_text.language(text) == "es"
    assert survey.WORDS["es"][0] <= survey_text.words(text) <= survey.WORDS["es"][1]
    assert survey_text.cited(text, RUN) >= survey.MIN_CITED
    assert grade_survey(ctx, tmp_path, text) == {}


def test_the_spanish_model_answer_passes_against_the_committed_runs(ctx):
    document = survey.model_answer("es")
    assert document.name == "README.es.md" and survey.model_answer("en") == survey.MODEL_ANSWER
    text = document.read_text()
    for path in survey.COMMITTED_RUNS:  # the tables as the Spanish templates render them
        assert tables(figure_rows.read(path), "es") in text, (
            f"{document}: regenerate {path}'s tables"
        )
    with ctx.grading("survey"):
        survey.grade(ctx, document)
    assert failed(ctx) == {}


SPANISH_MISTAKES = {  # each English wrong survey (distributed/test_exercises.py) -> the change that makes it in
    # Spanish, and the words its message must have; its check is the English case's
    "one paragraph": (lambda t: t.split("## DDP")[0][:400], "one page is 290-820"),
    "no pipeline": (lambda t: t.split("## Paralelismo de pipeline")[0], "no sentence is about"),
    "DDP said to shard": (
        lambda t: t.replace(
            "DDP guarda una réplica completa del modelo en cada rank",
            "DDP reparte los parámetros en shards",
        ),
        "what each rank holds",
    ),
    "FSDP said to all-reduce": (
        lambda t: t.replace(
            "Tiene que hacer un\nall-gather de los parámetros antes de que se ejecute cada unidad y un reduce-scatter",
            "Hace un all-reduce\nde los gradientes después de cada unidad, como",
        ),
        "all-gather",
    ),
    "tensor parallel described as pipeline parallel": (
        lambda t: t.replace(
            "parte cada matriz grande por columnas o por filas",
            "parte los bloques en etapas consecutivas, una por rank,",
        ).replace(
            "Cada bloque espera a un all-reduce de sus activaciones, en el forward y en el backward.",
            "Cada etapa envía sus activaciones a la siguiente, y un all-reduce promedia la pérdida.",
        ),
        "a stage of layers is pipeline parallel",
    ),
    "FSDP's collectives swapped": (
        lambda t: t.replace(
            "un\nall-gather de los parámetros", "un\nreduce-scatter de los parámetros"
        ).replace("y un reduce-scatter de los gradientes", "y un all-gather de los gradientes"),
        "says all-gather of gradients",
    ),
    "DDP said to all-reduce activations": (
        lambda t: t.replace("un all-reduce de los gradientes", "un all-reduce de las activaciones"),
        "what the all-reduce carries (gradients)",
    ),
    "pipeline parallel said to all-reduce": (
        lambda t: t.replace(
            "Las activaciones viajan con send y recv entre\nvecinos",
            "Los gradientes se reducen con un all-reduce entre las etapas",
        ),
        "says all-reduce of gradients",
    ),
    "a paragraph copied from the model answer": (
        lambda t: (
            t
            + "\n"
            + survey.model_answer("es").read_text().split("## DDP\n\n")[1].split("\n\n")[0]
            + "\n"
        ),
        "ddp guarda en cada rank una réplica completa",
    ),
    "a figure from the H200 run": (
        lambda t: t + "\nEl paso de DDP tardó 14,0 ms en las H200.\n",
        "14,0 ms",
    ),
}
WRONG_SURVEYS = [  # every English case has its Spanish equivalent (a KeyError here says which has none)
    (mistake, SPANISH_MISTAKES[mistake][0], check, SPANISH_MISTAKES[mistake][1])
    for mistake, _change, check, _words in ENGLISH_WRONG_SURVEYS
]


@pytest.mark.parametrize(
    "mistake, change, check, words", WRONG_SURVEYS, ids=[w[0] for w in WRONG_SURVEYS]
)
def test_wrong_spanish_surveys_fail_with_a_pointed_message(
    ctx, tmp_path, mistake, change, check, words
):
    wrong = grade_survey(ctx, tmp_path, change(good_survey()))
    hits = {name: message for name, message in wrong.items() if check in name}
    assert hits and any(words in m for m in hits.values()), wrong


def test_the_page_is_measured_in_the_surveys_language(ctx, tmp_path):
    """The Spanish model answer's 806 words are one page in Spanish (over English's 700); a Spanish survey past
    820 words is cut."""
    assert (
        survey.WORDS["en"][1]
        < survey_text.words(survey.model_answer("es").read_text())
        <= survey.WORDS["es"][1]
    )
    filler = good_survey().split("\n\n")[1]
    long = good_survey().replace("## DDP", " ".join([filler] * 3) + "\n\n## DDP")
    assert survey_text.words(long) > survey.WORDS["es"][1]
    wrong = grade_survey(ctx, tmp_path, long)
    assert list(wrong) == ["survey: words of prose in survey.md (one page)"]
    assert "one page is 290-820: cut" in wrong["survey: words of prose in survey.md (one page)"]


def test_a_wrong_statement_in_spanish_is_named(ctx, tmp_path):
    """Holding a shard but also 'reparte los parámetros': DDP's sentences say what belongs to FSDP."""
    text = good_survey().replace("y momento.", "y momento. DDP reparte los parámetros en shards.")
    wrong = grade_survey(ctx, tmp_path, text)
    assert list(wrong) == ["survey: DDP named, with what each rank holds and what is communicated"]
    assert "sharding them is FSDP" in wrong[list(wrong)[0]]


def test_a_survey_grades_the_same_whatever_language_the_run_speaks(tmp_path):
    """Check by check, the same verdicts and numbers; only the words of names and messages change."""
    texts = {
        "good": good_survey(),
        "no pipeline": SPANISH_MISTAKES["no pipeline"][0](good_survey()),
    }
    graded = {}
    for lang in ("en", "es"):
        i18n.set_language(lang)
        try:
            for key, text in texts.items():
                (tmp_path / lang / key).mkdir(parents=True)
                ctx = LabContext(
                    "distributed",
                    tmp_path / lang / key,
                    RunOptions("cpu", RUN[0]["n"], 0, lang=lang),
                )
                grade_survey(ctx, tmp_path / lang / key, text)
                graded[lang, key] = ctx.checks
        finally:
            i18n.set_language("en")
    for key in texts:
        en, es = graded["en", key], graded["es", key]
        assert [c.passed for c in en] == [c.passed for c in es]
        assert [c.value for c in en if not isinstance(c.value, list)] == [
            c.value for c in es if not isinstance(c.value, list)
        ]
    missing = next(c for c in graded["es", "no pipeline"] if not c.passed)
    assert (
        missing.name
        == "survey: paralelismo de pipeline nombrado, con lo que guarda cada rank y lo que se comunica"
    )
    assert (
        missing.message
        == "paralelismo de pipeline: ninguna frase habla solo de paralelismo de pipeline"
    )


@pytest.mark.parametrize(
    "written, decimal, value, decimals",
    [
        ("1,5", ",", 1.5, 1),  # a decimal comma
        ("1.5", ",", 1.5, 1),  # a decimal point, whatever the text's mark: one digit after it
        ("1.517.920", ".", 1517920, 0),  # points between thousands
        ("1,517,920", ",", 1517920, 0),  # commas between thousands
        ("1.517.920,5", ".", 1517920.5, 1),  # both marks: the last is the decimal one
        ("1,517,920.5", ",", 1517920.5, 1),
        ("1,118", ",", 1.118, 3),  # one mark, three digits: the text's decimal mark decides
        ("1,118", ".", 1118, 0),
        ("1.118", ",", 1118, 0),
        ("1.118", ".", 1.118, 3),
        ("0,035", ".", 0.035, 3),  # a thousands group never follows 0
        ("1118,048", ".", 1118.048, 3),  # nor four digits
    ],
)
def test_numbers_are_read_as_either_language_writes_them(written, decimal, value, decimals):
    assert survey_text.parse(written, decimal) == (pytest.approx(value), decimals)


def test_the_decimal_mark_is_the_texts_own_else_its_languages():
    assert (
        survey_text.decimal_mark("Cada rank guarda 1,68 MB y envía 1.52 MB, y la red 0,84 MB.")
        == ","
    )
    assert survey_text.decimal_mark("Each rank holds 1.68 MB, sends 1.52 MB.") == "."
    assert survey_text.decimal_mark("DDP hace un all-reduce de 1,118 kB en la red.") == ","
    assert survey_text.decimal_mark("DDP all-reduces 1,118 kB of the gradients.") == "."
    # read so, a Spanish text's 1.118 kB is DDP's all-reduce (1118 kB), 1,118 kB is not a figure of the run
    assert survey_text.untraced("El all-reduce de DDP mueve 1.118 kB por la red.", RUN) == []
    assert survey_text.untraced("El all-reduce de DDP mueve 1,118 kB por la red.", RUN)


def test_the_language_is_read_from_the_text():
    assert survey_text.language(survey.model_answer("es").read_text()) == "es"
    assert survey_text.language(survey.MODEL_ANSWER.read_text()) == "en"
    assert survey_text.words("¿Está el año en la señal? Sí.") == 7  # accents and ñ inside words


def test_the_template_is_written_in_the_language_in_use(spanish):
    """`exercises init` or `check` in Spanish writes the Spanish template, its tables in Spanish."""
    text = survey.template(survey.COMMITTED_RUNS[0].parent, survey.REPO)
    assert text.startswith("# Mi survey") and "## Paralelismo de tensores" in text
    for table in tables(RUN, "es").split("\n\n"):
        assert table.strip() in text
    assert survey_text.untraced(text, RUN) == []
    assert survey_text.words(text) < survey.WORDS["es"][0]  # the learner's words are still to come
