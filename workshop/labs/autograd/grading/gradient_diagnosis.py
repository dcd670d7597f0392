"""What a wrong gradient says about the mistake that made it: the hand-gradient exercises' diagnoses, as data.

Each Diagnosis looks at the learner's output next to autograd's and names one typical mistake when the output
shows it: not a tensor, a transposed or mis-summed shape, NaN/inf from an unshifted softmax, the wrong dtype, the
<pad> mask dropped or put on the wrong axis, the <pad> positions averaged into the loss, a result that agrees
only to a lower precision's digits (a float32 step in a float64 computation, an epsilon in a denominator), a
typical factor (a sum where the loss is a mean, a sign). The engine (engine.py) reads them in order for a
failed output, and the first that the output shows speaks; the last ones describe the error and name no mistake.

The conditions (gradient_conditions.py) use tensor methods and the facts the case builder measured
(hand_cases.py); the messages are formatted with their values and those facts.
"""

from __future__ import annotations

from workshop.declarations.diagnosis import Diagnosis
from workshop.i18n import N_
from workshop.labs.autograd.grading.gradient_conditions import (
    all_of,
    as_many_entries,
    constant_factor,
    constant_factor_described,
    divided_by,
    epsilon_in_the_mean,
    exp_overflowed,
    fewer_digits,
    float32_digits,
    gradient_on_pad_rows,
    loss_over_every_position,
    many_entries,
    not_a_tensor,
    not_finite,
    one_entry,
    one_over_n_in_float32,
    pad_column_zeroed,
    scaled,
    scaled_by,
    transposed,
    where_it_differs,
    wrong_dtype,
    wrong_shape,
    zero_real_rows,
)

SIGN_FLIPPED = N_("the sign flipped")
FLIPPED = scaled_by(lambda facts: -1.0)
PRECISION = N_("a float32 step in a float64 computation")
EPSILON = N_("an epsilon in a denominator")
PAD_COUNTED = N_("<pad> positions counted")
WRONG_SHAPE = N_("the wrong shape")

# In order: the first that a wrong output shows names its mistake.
HAND_DIAGNOSES = (
    Diagnosis(N_("not a tensor"), not_a_tensor, N_("{name} is a {kind}, not a tensor")),
    Diagnosis(
        N_("a transposed gradient"),
        all_of(wrong_shape, transposed),
        N_(
            "{name} has shape {got}, expected {want}: transposed: dW has W's shape (V, C), not its "
            "transpose's"
        ),
    ),
    Diagnosis(
        WRONG_SHAPE,
        wrong_shape,
        N_(
            "{name} has shape {got}, expected {want}: db has one entry per class: sum G over every "
            "position (all axes but the last)"
        ),
        output="db",
    ),
    Diagnosis(
        WRONG_SHAPE,
        wrong_shape,
        N_(
            "{name} has shape {got}, expected {want}: return one number, a 0-dim tensor: the mean over "
            "the real targets"
        ),
        output="loss",
    ),
    Diagnosis(
        WRONG_SHAPE,
        all_of(wrong_shape, as_many_entries),
        N_(
            "{name} has shape {got}, expected {want}: the right number of entries in the wrong shape: "
            "reshape to {want}"
        ),
    ),
    Diagnosis(
        WRONG_SHAPE,
        wrong_shape,
        N_("{name} has shape {got}, expected {want}: check which axes you summed or reshaped"),
    ),
    Diagnosis(
        N_("no max shift before exp()"),
        all_of(not_finite, exp_overflowed),
        N_(
            "{name} has {k} NaN or inf entries of {size}: exp() of logits up to {largest:.0f} overflows "
            "({dtype} overflows past {limit:.1f}): subtract each row's max before exp(), which leaves the "
            "softmax unchanged"
        ),
    ),
    Diagnosis(
        N_("NaN or inf"),
        not_finite,
        N_(
            "{name} has {k} NaN or inf entries of {size}: look for a division by zero or the log of zero"
        ),
    ),
    Diagnosis(
        N_("the wrong dtype"),
        wrong_dtype,
        N_(
            "{name} is {got}, the inputs are {want}: compute in the inputs' dtype "
            "(make masks and one-hot tensors with dtype=logits.dtype)"
        ),
    ),
    Diagnosis(
        N_("the <pad> mask on the class column"),
        pad_column_zeroed,
        N_(
            "the column of the class <pad> (id {pad_id}) is zero on the real rows: the mask applies to "
            "the positions whose target is <pad> (rows), not to the class <pad> (a column)"
        ),
        output="dlogits",
    ),
    Diagnosis(
        N_("the <pad> mask misaligned"),
        all_of(gradient_on_pad_rows, zero_real_rows),
        N_(
            "{name} is zero on some real rows and not on the <pad> rows: the mask is misaligned; "
            "flatten targets (B, T) the way you flatten the logits, row b*T + t"
        ),
    ),
    Diagnosis(
        PAD_COUNTED,
        gradient_on_pad_rows,
        N_(
            "the {n_pad} rows whose target is <pad> have a nonzero {name}: the <pad> mask was dropped; "
            "keep only the real rows (target != <pad>) and divide by their number N = {n}"
        ),
    ),
    Diagnosis(
        PAD_COUNTED,
        loss_over_every_position,
        N_(
            "the loss is the mean over all {m} positions, the {n_pad} <pad> ones included: lm_loss "
            "averages over the N = {n} real targets only"
        ),
        output="loss",
    ),
    # Rounding, not a formula: named where the evidence allows (1/N rounded to float32, N with an epsilon
    # added, float32's digits in a float64 call), else described.
    Diagnosis(
        PRECISION,
        all_of(fewer_digits, divided_by, constant_factor, many_entries, one_over_n_in_float32),
        N_(
            "{name} agrees with autograd's to about {digits:.0f} significant digits (max error {rel:.1e} "
            "of its largest entry); {dtype} keeps about {kept:.0f}: every entry is off by the same "
            "factor, {r:.10g}: that is 1/N = 1/{n} rounded to float32; compute the mask and N in the "
            "logits' dtype"
        ),
    ),
    Diagnosis(
        PRECISION,
        all_of(fewer_digits, divided_by, constant_factor, one_entry, one_over_n_in_float32),
        N_(
            "{name} agrees with autograd's to about {digits:.0f} significant digits (max error {rel:.1e} "
            "of its largest entry); {dtype} keeps about {kept:.0f}: it is {r:.10g} times autograd's: "
            "that is 1/N = 1/{n} rounded to float32; compute the mask and N in the logits' dtype"
        ),
    ),
    Diagnosis(
        EPSILON,
        all_of(fewer_digits, divided_by, constant_factor, many_entries, epsilon_in_the_mean),
        N_(
            "{name} agrees with autograd's to about {digits:.0f} significant digits (max error {rel:.1e} "
            "of its largest entry); {dtype} keeps about {kept:.0f}: every entry is off by the same "
            "factor, {r:.10g}: as if N = {n} were N + {eps:.0e}, an epsilon added to the mean's "
            "denominator; N counts real targets, at least 1, so the mean needs none"
        ),
    ),
    Diagnosis(
        EPSILON,
        all_of(fewer_digits, divided_by, constant_factor, one_entry, epsilon_in_the_mean),
        N_(
            "{name} agrees with autograd's to about {digits:.0f} significant digits (max error {rel:.1e} "
            "of its largest entry); {dtype} keeps about {kept:.0f}: it is {r:.10g} times autograd's: as "
            "if N = {n} were N + {eps:.0e}, an epsilon added to the mean's denominator; N counts real "
            "targets, at least 1, so the mean needs none"
        ),
    ),
    Diagnosis(
        None,
        all_of(fewer_digits, constant_factor_described),
        N_(
            "{name} agrees with autograd's to about {digits:.0f} significant digits (max error {rel:.1e} "
            "of its largest entry); {dtype} keeps about {kept:.0f}: every entry is off by the same "
            "factor, {r:.10g}: a constant a little off multiplies the result (rounding would differ from "
            "entry to entry)"
        ),
    ),
    Diagnosis(
        PRECISION,
        all_of(fewer_digits, float32_digits),
        N_(
            "{name} agrees with autograd's to about {digits:.0f} significant digits (max error {rel:.1e} "
            "of its largest entry); {dtype} keeps about {kept:.0f}: that is float32's precision (about 7 "
            "digits): a step computed in float32 would explain it (a tensor made without "
            "dtype=logits.dtype, a .float(), a float32 constant)"
        ),
    ),
    Diagnosis(
        None,
        fewer_digits,
        N_(
            "{name} agrees with autograd's to about {digits:.0f} significant digits (max error {rel:.1e} "
            "of its largest entry); {dtype} keeps about {kept:.0f}: more than rounding explains: look for "
            "a small constant added (an epsilon) or a step in a lower precision"
        ),
    ),
    # A typical factor, the right direction otherwise.
    Diagnosis(
        N_("a sum where the loss is a mean"),
        scaled_by(lambda facts: float(facts["n"])),
        N_(
            "{name} is {r:.8g} times autograd's: a sum over the {n} real targets where the loss is their "
            "mean: divide by N"
        ),
    ),
    Diagnosis(
        N_("divided by N twice"),
        scaled_by(lambda facts: 1 / facts["n"]),
        N_(
            "{name} is {r:.8g} times autograd's: divided by N twice: dL/dlogits already carries the "
            "mean's 1/N"
        ),
    ),
    Diagnosis(
        PAD_COUNTED,
        scaled_by(lambda facts: facts["n"] / facts["m"]),
        N_(
            "{name} is {r:.8g} times autograd's: divided by all {m} positions, <pad> included: divide by "
            "the N = {n} real targets"
        ),
    ),
    # Where a sign flipped, by the output that shows it: each names its own formula. The linear layer's
    # gradients are given dL/dz, so their sign says nothing of P - Y: the minus is in that output's own line.
    Diagnosis(
        SIGN_FLIPPED,
        FLIPPED,
        N_(
            "{name} is {r:.8g} times autograd's: the sign is flipped: the loss is the mean of "
            "-log P[i, t_i], a positive number"
        ),
        output="loss",
    ),
    Diagnosis(
        SIGN_FLIPPED,
        FLIPPED,
        N_(
            "{name} is {r:.8g} times autograd's: the sign is flipped: dL/dz = P - Y (softmax minus "
            "one-hot), not Y - P"
        ),
        output="dlogits",
    ),
    Diagnosis(
        SIGN_FLIPPED,
        FLIPPED,
        N_(
            "{name} is {r:.8g} times autograd's: the sign of dW is flipped: dW = G^T X with G = dL/dz as "
            "given, no minus"
        ),
        output="dW",
    ),
    Diagnosis(
        SIGN_FLIPPED,
        FLIPPED,
        N_(
            "{name} is {r:.8g} times autograd's: the sign of db is flipped: db = the sum of G = dL/dz (as "
            "given) over the rows, no minus"
        ),
        output="db",
    ),
    Diagnosis(
        SIGN_FLIPPED,
        FLIPPED,
        N_(
            "{name} is {r:.8g} times autograd's: the sign of dx is flipped: dx = G W with G = dL/dz as "
            "given, no minus"
        ),
        output="dx",
    ),
    Diagnosis(
        None,
        scaled,
        N_("{name} is {r:.8g} times autograd's: the right direction at the wrong scale"),
    ),
    Diagnosis(
        None,
        where_it_differs,
        N_(
            "{name} differs from autograd's by up to {rel:.2g} of its largest entry, worst at index "
            "{where}: not a constant factor, a mask or a shape; re-derive it"
        ),
    ),
)
