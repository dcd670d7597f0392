"""tools/style_rules.py, the Spanish style guide's rules as data: each rule finds its violation and leaves the
guide's own form alone; the number rules' fixes write what the guide asks (1 118 048, 63 %); English function
words are counted, Spanish ones and kept terms are not. (The lint over the repository: tools/test_style_lint.py.)"""

from __future__ import annotations

import pytest

from tools import style_rules
from tools.style_rules import NBSP

RULES = {rule.name: rule for rule in style_rules.RULES}


@pytest.mark.parametrize(
    "name, wrong, right",
    [
        ("number grouped with commas", "pesa 1,118,048 bytes", f"pesa 1{NBSP}118{NBSP}048 bytes"),
        (
            "number grouped with points",
            "pesa 1.118.048 bytes",
            f"pesa 1{NBSP}118{NBSP}048 bytes",
        ),
        ("English status word", "el ejercicio está PASSED", "el ejercicio está superado"),
    ],
)
def test_each_rule_finds_its_violation_and_not_the_guides_form(name, wrong, right):
    rule = RULES[name]
    assert rule.pattern.search(wrong) and not rule.pattern.search(right)
    if rule.fix:
        assert rule.pattern.sub(lambda m: rule.fix(m.group()), wrong) == right


def test_every_rule_says_what_to_write():
    assert all(rule.advice for rule in style_rules.RULES)
    assert len(RULES) == len(style_rules.RULES)  # names are unique: a finding names its rule


def test_english_function_words_are_counted_spanish_ones_are_not():
    assert style_rules.english_words("the gradient of the loss") == {"the", "of"}
    assert style_rules.english_words("el gradiente de la pérdida, in-place, per rank") == set()
