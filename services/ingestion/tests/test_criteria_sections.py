"""Per-section checks of the curated criteria on the real PDF: patients at the boundaries the text states.

Each case is (recommendation id, expected met?, patient facts). The expectations come from the
recommendation text, e.g. 1.1.1 "aged 40 and over with unexplained haemoptysis" -> 39 not met, 40 met.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from ng12_common.criteria import EvalContext

sys.path.insert(0, str(Path(__file__).parent))
from criteria_fixtures import *  # noqa: F403 (session fixtures)
from criteria_fixtures import met_ids, results

Case = tuple[str, bool, dict[str, Any]]


def S(*names: str, **mods: list[str]) -> dict[str, list[str]]:
    """symptoms mapping: S("cough", haematuria=["visible"])."""
    out: dict[str, list[str]] = {n: [] for n in names}
    out.update(mods)
    return out


def run(ctx: EvalContext, cases: list[Case]) -> None:
    failures = []
    for rid, expected, facts in cases:
        res = results(ctx, **facts)[rid]
        if res.met is not expected:
            failures.append(f"{rid} expected met={expected} for {facts}: missing={res.missing}")
    assert not failures, "\n".join(failures)


def test_1_1_lung_and_pleural(eval_ctx: EvalContext) -> None:
    six1 = S("cough")
    six2 = S("cough", "fatigue")
    run(
        eval_ctx,
        [
            ("1.1.1", False, {"age": 39, "symptoms": S("haemoptysis")}),
            ("1.1.1", True, {"age": 40, "symptoms": S("haemoptysis")}),
            ("1.1.1", False, {"age": 60, "symptoms": S(haemoptysis=["explained"])}),
            ("1.1.1", True, {"age": 30, "findings": {"chest_xray_suggests_lung_cancer"}}),
            ("1.1.2", False, {"age": 39, "smoking": "current", "symptoms": six2}),
            ("1.1.2", True, {"age": 40, "smoking": "never", "symptoms": six2}),
            ("1.1.2", False, {"age": 40, "smoking": "never", "symptoms": six1}),
            ("1.1.2", True, {"age": 40, "smoking": "ex", "symptoms": six1}),
            ("1.1.2", True, {"age": 40, "smoking": "current", "symptoms": S("appetite_loss")}),
            ("1.1.2", False, {"age": 50, "smoking": "current", "symptoms": S("hoarseness")}),
            ("1.1.3", False, {"age": 39, "findings": {"finger_clubbing"}}),
            ("1.1.3", True, {"age": 40, "findings": {"finger_clubbing"}}),
            ("1.1.3", True, {"age": 40, "symptoms": S(chest_infection=["recurrent"])}),
            ("1.1.3", False, {"age": 40, "symptoms": S("chest_infection")}),
            ("1.1.3", True, {"age": 40, "findings": {"thrombocytosis"}}),
            ("1.1.3", False, {"age": 40, "symptoms": S("cervical_lymphadenopathy")}),
            ("1.1.3", True, {"age": 40, "symptoms": S(cervical_lymphadenopathy=["persistent"])}),
            ("1.1.4", True, {"age": 30, "findings": {"chest_xray_suggests_mesothelioma"}}),
            (
                "1.1.5",
                True,
                {"age": 40, "smoking": "never", "history": {"asbestos_exposure"}, "symptoms": six1},
            ),
            ("1.1.5", False, {"age": 40, "smoking": "never", "symptoms": six1}),
            ("1.1.5", False, {"age": 39, "history": {"asbestos_exposure"}, "symptoms": six2}),
            (
                "1.1.2",
                False,
                {"age": 40, "smoking": "never", "history": {"asbestos_exposure"}, "symptoms": six1},
            ),
            ("1.1.6", False, {"age": 39, "findings": {"chest_signs_compatible_with_pleural_disease"}}),
            ("1.1.6", True, {"age": 40, "findings": {"chest_signs_compatible_with_pleural_disease"}}),
        ],
    )


def test_1_2_upper_gi(eval_ctx: EvalContext) -> None:
    cases: list[Case] = []
    for refer, endoscopy, scope in (("1.2.1", "1.2.3", "1.2.2"), ("1.2.7", "1.2.9", "1.2.8")):
        cases += [
            (refer, True, {"age": 20, "symptoms": S("dysphagia")}),
            (refer, False, {"age": 54, "symptoms": S("weight_loss", "reflux")}),
            (refer, True, {"age": 55, "symptoms": S("weight_loss", "reflux")}),
            (refer, False, {"age": 70, "symptoms": S("reflux")}),
            (scope, True, {"age": 20, "symptoms": S("haematemesis")}),
            (endoscopy, False, {"age": 54, "symptoms": S(dyspepsia=["treatment_resistant"])}),
            (endoscopy, True, {"age": 55, "symptoms": S(dyspepsia=["treatment_resistant"])}),
            (endoscopy, False, {"age": 55, "symptoms": S("dyspepsia")}),
            (
                endoscopy,
                True,
                {"age": 55, "symptoms": S("upper_abdominal_pain"), "findings": {"low_haemoglobin"}},
            ),
            (endoscopy, False, {"age": 55, "symptoms": S("upper_abdominal_pain")}),
            (endoscopy, True, {"age": 55, "symptoms": S("vomiting"), "findings": {"thrombocytosis"}}),
            (endoscopy, True, {"age": 55, "symptoms": S("nausea", "reflux")}),
            (endoscopy, False, {"age": 55, "symptoms": S("nausea", "vomiting")}),
        ]
    cases += [
        ("1.2.4", False, {"age": 39, "symptoms": S("jaundice")}),
        ("1.2.4", True, {"age": 40, "symptoms": S("jaundice")}),
        ("1.2.5", False, {"age": 59, "symptoms": S("weight_loss", "diarrhoea")}),
        ("1.2.5", True, {"age": 60, "symptoms": S("weight_loss", "new_onset_diabetes")}),
        ("1.2.5", False, {"age": 60, "symptoms": S("weight_loss")}),
        ("1.2.6", True, {"age": 30, "findings": {"upper_abdominal_mass_consistent_with_stomach_cancer"}}),
        (
            "1.2.10",
            True,
            {"age": 30, "findings": {"upper_abdominal_mass_consistent_with_enlarged_gall_bladder"}},
        ),
        ("1.2.11", True, {"age": 30, "findings": {"upper_abdominal_mass_consistent_with_enlarged_liver"}}),
    ]
    run(eval_ctx, cases)


def test_1_3_lower_gi(eval_ctx: EvalContext) -> None:
    run(
        eval_ctx,
        [
            ("1.3.1", False, {"age": 17, "symptoms": S("change_in_bowel_habit")}),
            ("1.3.1", True, {"age": 18, "symptoms": S("change_in_bowel_habit")}),
            ("1.3.1", True, {"age": 25, "symptoms": S("iron_deficiency_anaemia")}),
            ("1.3.1", True, {"age": 25, "findings": {"abdominal_mass"}}),
            ("1.3.1", False, {"age": 39, "symptoms": S("weight_loss", "abdominal_pain")}),
            ("1.3.1", True, {"age": 40, "symptoms": S("weight_loss", "abdominal_pain")}),
            ("1.3.1", True, {"age": 49, "symptoms": S("rectal_bleeding", "abdominal_pain")}),
            ("1.3.1", False, {"age": 49, "symptoms": S("rectal_bleeding")}),
            ("1.3.1", True, {"age": 50, "symptoms": S("rectal_bleeding")}),
            ("1.3.1", False, {"age": 50, "symptoms": S(rectal_bleeding=["explained"])}),
            ("1.3.1", False, {"age": 59, "symptoms": S("anaemia")}),
            ("1.3.1", True, {"age": 60, "symptoms": S("anaemia")}),
            ("1.3.2", False, {"age": 60, "tests": {"fit": 9.9}}),
            ("1.3.2", True, {"age": 60, "tests": {"fit": 10}}),
            ("1.3.3", True, {"age": 60, "tests": {"fit": 9.9}}),
            ("1.3.3", False, {"age": 60, "tests": {"fit": 10}}),
            ("1.3.3", True, {"age": 60, "history": {"fit_sample_not_returned"}}),
            ("1.3.4", True, {"age": 18, "symptoms": S("change_in_bowel_habit")}),
            ("1.3.5", False, {"age": 17, "findings": {"rectal_mass"}}),
            ("1.3.5", True, {"age": 18, "findings": {"rectal_mass"}}),
            ("1.3.6", True, {"age": 20, "symptoms": S("anal_ulceration")}),
            ("1.3.6", False, {"age": 20, "symptoms": S(anal_mass=["explained"])}),
        ],
    )


def test_1_4_breast(eval_ctx: EvalContext) -> None:
    run(
        eval_ctx,
        [
            ("1.4.1", False, {"age": 29, "sex": "female", "symptoms": S("breast_lump")}),
            ("1.4.3", True, {"age": 29, "sex": "female", "symptoms": S("breast_lump")}),
            ("1.4.1", True, {"age": 30, "sex": "female", "symptoms": S("breast_lump")}),
            ("1.4.3", False, {"age": 30, "sex": "female", "symptoms": S("breast_lump")}),
            ("1.4.1", True, {"age": 30, "sex": "male", "symptoms": S("breast_lump")}),  # "people"
            ("1.4.1", False, {"age": 49, "symptoms": S(nipple_discharge=["unilateral"])}),
            ("1.4.1", True, {"age": 50, "symptoms": S(nipple_retraction=["unilateral"])}),
            ("1.4.1", False, {"age": 50, "symptoms": S("nipple_discharge")}),  # not "one nipple only"
            ("1.4.2", False, {"age": 29, "symptoms": S("axillary_lump")}),
            ("1.4.2", True, {"age": 30, "symptoms": S("axillary_lump")}),
            ("1.4.2", True, {"age": 20, "findings": {"skin_changes_suggest_breast_cancer"}}),
        ],
    )


def test_1_5_gynaecological(eval_ctx: EvalContext) -> None:
    f = {"sex": "female"}
    run(
        eval_ctx,
        [
            ("1.5.1", True, {**f, "age": 18, "findings": {"ascites"}}),
            ("1.5.1", False, {**f, "age": 17, "findings": {"ascites"}}),
            ("1.5.1", False, {"sex": "male", "age": 50, "findings": {"ascites"}}),
            ("1.5.1", True, {**f, "age": 40, "findings": {"pelvic_mass"}}),
            ("1.5.1", False, {**f, "age": 40, "findings": {"pelvic_mass", "uterine_fibroids"}}),
            ("1.5.2", True, {**f, "age": 40, "symptoms": S(abdominal_distension=["persistent"])}),
            ("1.5.2", True, {**f, "age": 40, "symptoms": S(urinary_urgency=["frequent"])}),
            ("1.5.2", False, {**f, "age": 40, "symptoms": S("early_satiety")}),  # no persistence, no duration
            ("1.5.2", False, {"sex": "male", "age": 60, "symptoms": S(abdominal_distension=["persistent"])}),
            ("1.5.3", True, {**f, "age": 18, "symptoms": S("fatigue")}),
            ("1.5.3", False, {"sex": "male", "age": 40, "symptoms": S("fatigue")}),
            ("1.5.4", True, {**f, "age": 40, "symptoms": S("early_satiety")}),
            ("1.5.4", False, {**f, "age": 40, "symptoms": S(early_satiety=["persistent"])}),
            ("1.5.5", False, {**f, "age": 49, "symptoms": S("ibs_symptoms")}),
            ("1.5.5", True, {**f, "age": 50, "symptoms": S("ibs_symptoms")}),
            ("1.5.6", True, {**f, "age": 40, "symptoms": S(pelvic_pain=["frequent"])}),
            ("1.5.6", False, {**f, "age": 40, "symptoms": S("pelvic_pain")}),
            ("1.5.7", False, {**f, "age": 50, "tests": {"ca125": 34.9}}),
            ("1.5.7", True, {**f, "age": 50, "tests": {"ca125": 35}}),
            ("1.5.9", True, {**f, "age": 50, "tests": {"ca125": 34.9}}),
            ("1.5.9", False, {**f, "age": 50, "tests": {"ca125": 35}}),
            ("1.5.9", True, {**f, "age": 50, "tests": {"ca125": 35}, "findings": {"normal_ultrasound"}}),
            ("1.5.8", True, {**f, "age": 50, "findings": {"ultrasound_suggests_ovarian_cancer"}}),
            ("1.5.10", False, {**f, "age": 54, "symptoms": S("post_menopausal_bleeding")}),
            ("1.5.11", True, {**f, "age": 54, "symptoms": S("post_menopausal_bleeding")}),
            ("1.5.10", True, {**f, "age": 55, "symptoms": S("post_menopausal_bleeding")}),
            ("1.5.11", False, {**f, "age": 55, "symptoms": S("post_menopausal_bleeding")}),
            (
                "1.5.12",
                False,
                {**f, "age": 54, "symptoms": S(haematuria=["visible"]), "findings": {"thrombocytosis"}},
            ),
            (
                "1.5.12",
                True,
                {**f, "age": 55, "symptoms": S(haematuria=["visible"]), "findings": {"high_blood_glucose"}},
            ),
            ("1.5.12", False, {**f, "age": 55, "symptoms": S(haematuria=["visible"])}),
            ("1.5.12", True, {**f, "age": 55, "symptoms": S(vaginal_discharge=["first_presentation"])}),
            ("1.5.12", False, {**f, "age": 55, "symptoms": S("vaginal_discharge")}),
            ("1.5.12", True, {**f, "age": 55, "symptoms": S("vaginal_discharge", "haematuria")}),
            ("1.5.13", True, {**f, "age": 30, "findings": {"cervix_consistent_with_cervical_cancer"}}),
            ("1.5.14", True, {**f, "age": 30, "symptoms": S("vulval_ulceration")}),
            ("1.5.14", False, {"sex": "male", "age": 30, "symptoms": S("vulval_ulceration")}),
            ("1.5.15", True, {**f, "age": 30, "symptoms": S("vaginal_mass")}),
        ],
    )


def test_1_6_urological(eval_ctx: EvalContext) -> None:
    m = {"sex": "male"}
    vh = S(haematuria=["visible"])
    cases: list[Case] = [
        ("1.6.1", True, {**m, "age": 60, "findings": {"prostate_feels_malignant_on_dre"}}),
        ("1.6.2", True, {**m, "age": 60, "symptoms": S("nocturia")}),
        ("1.6.2", True, {**m, "age": 60, "symptoms": S("erectile_dysfunction")}),
        ("1.6.2", True, {**m, "age": 60, "symptoms": vh}),
        ("1.6.2", False, {"sex": "female", "age": 60, "symptoms": S("nocturia")}),
    ]
    for age, threshold in (
        (40, 2.5),
        (49, 2.5),
        (50, 3.5),
        (59, 3.5),
        (60, 4.5),
        (69, 4.5),
        (70, 6.5),
        (79, 6.5),
    ):
        cases += [
            ("1.6.3", False, {**m, "age": age, "symptoms": S("nocturia"), "tests": {"psa": threshold}}),
            ("1.6.3", True, {**m, "age": age, "symptoms": S("nocturia"), "tests": {"psa": threshold + 0.1}}),
        ]
    cases += [
        (
            "1.6.3",
            False,
            {**m, "age": 39, "symptoms": S("nocturia"), "tests": {"psa": 20}},
        ),  # clinical judgement
        ("1.6.3", False, {**m, "age": 80, "symptoms": S("nocturia"), "tests": {"psa": 20}}),
        ("1.6.3", False, {**m, "age": 65, "tests": {"psa": 20}}),  # no symptoms per 1.6.2
    ]
    for rid in ("1.6.4", "1.6.6"):
        cases += [
            (rid, False, {"age": 44, "symptoms": vh}),
            (rid, True, {"age": 45, "symptoms": vh}),
            (rid, True, {"sex": "female", "age": 45, "symptoms": vh}),
            (rid, False, {"age": 45, "symptoms": S("urinary_tract_infection", haematuria=["visible"])}),
            (
                rid,
                True,
                {
                    "age": 45,
                    "symptoms": S(haematuria=["visible", "recurrent"]),
                    "history": {"uti_successfully_treated"},
                },
            ),
            (rid, False, {"age": 45, "symptoms": S("haematuria")}),  # not recorded as visible
        ]
    cases += [
        ("1.6.4", False, {"age": 59, "symptoms": S("dysuria", haematuria=["non_visible"])}),
        ("1.6.4", True, {"age": 60, "symptoms": S("dysuria", haematuria=["non_visible"])}),
        (
            "1.6.4",
            True,
            {"age": 60, "symptoms": S(haematuria=["non_visible"]), "findings": {"raised_white_cell_count"}},
        ),
        ("1.6.4", False, {"age": 60, "symptoms": S(haematuria=["non_visible"])}),
        ("1.6.6", False, {"age": 60, "symptoms": S("dysuria", haematuria=["non_visible"])}),
        ("1.6.5", False, {"age": 59, "symptoms": S(urinary_tract_infection=["recurrent"])}),
        ("1.6.5", True, {"age": 60, "symptoms": S(urinary_tract_infection=["recurrent"])}),
        ("1.6.5", False, {"age": 60, "symptoms": S("urinary_tract_infection")}),
        ("1.6.7", True, {**m, "age": 30, "symptoms": S("non_painful_testicular_enlargement")}),
        ("1.6.7", False, {"sex": "female", "age": 30, "symptoms": S("non_painful_testicular_enlargement")}),
        ("1.6.7", False, {**m, "age": 30, "symptoms": S("testicular_pain")}),
        ("1.6.8", True, {**m, "age": 30, "symptoms": S("testicular_pain")}),
        ("1.6.9", False, {**m, "age": 50, "symptoms": S("penile_mass")}),  # STI not recorded as excluded
        ("1.6.9", True, {**m, "age": 50, "symptoms": S("penile_mass"), "history": {"sti_excluded"}}),
        (
            "1.6.9",
            True,
            {
                **m,
                "age": 50,
                "symptoms": S(penile_lesion=["persistent"]),
                "history": {"sti_treatment_completed"},
            },
        ),
        ("1.6.10", True, {**m, "age": 50, "symptoms": S("foreskin_or_glans_symptoms")}),
    ]
    run(eval_ctx, cases)


def test_1_7_skin(eval_ctx: EvalContext) -> None:
    def lesion(*mods: str, size: float | None = None) -> dict[str, Any]:
        q = {"size_mm": size} if size is not None else {}
        return {"pigmented_skin_lesion": {"modifiers": set(mods), "qualifiers": q}}

    run(
        eval_ctx,
        [
            ("1.7.1", True, {"age": 40, "symptoms": lesion("change_in_size", "irregular_colour")}),
            ("1.7.1", True, {"age": 40, "symptoms": lesion("irregular_shape", size=7)}),
            ("1.7.1", False, {"age": 40, "symptoms": lesion("irregular_shape", size=6.9)}),
            ("1.7.1", False, {"age": 40, "symptoms": lesion("inflammation", "oozing")}),
            ("1.7.1", True, {"age": 40, "symptoms": lesion("inflammation", "oozing", "change_in_sensation")}),
            ("1.7.1", True, {"age": 40, "symptoms": lesion(), "tests": {"seven_point_checklist": 3}}),
            ("1.7.1", False, {"age": 40, "symptoms": lesion(), "tests": {"seven_point_checklist": 2}}),
            ("1.7.2", True, {"age": 40, "findings": {"dermoscopy_suggests_melanoma"}}),
            ("1.7.3", True, {"age": 40, "findings": {"skin_lesion_suggests_nodular_melanoma"}}),
            ("1.7.4", True, {"age": 40, "findings": {"skin_lesion_suspicious_of_scc"}}),
            ("1.7.5", True, {"age": 40, "findings": {"skin_lesion_suspicious_of_bcc"}}),
            ("1.7.6", False, {"age": 40, "findings": {"skin_lesion_suspicious_of_bcc"}}),
            (
                "1.7.6",
                True,
                {
                    "age": 40,
                    "findings": {"skin_lesion_suspicious_of_bcc"},
                    "history": {"concern_delay_significant_impact"},
                },
            ),
        ],
    )


def test_1_8_head_and_neck(eval_ctx: EvalContext) -> None:
    run(
        eval_ctx,
        [
            ("1.8.1", False, {"age": 44, "symptoms": S("neck_lump")}),
            ("1.8.1", True, {"age": 45, "symptoms": S("neck_lump")}),
            ("1.8.1", True, {"age": 45, "symptoms": S(hoarseness=["persistent"])}),
            ("1.8.1", False, {"age": 45, "symptoms": S("hoarseness")}),
            ("1.8.1", False, {"age": 44, "symptoms": S(hoarseness=["persistent"])}),
            (
                "1.8.2",
                False,
                {"age": 30, "symptoms": {"oral_ulceration": {"qualifiers": {"duration_days": 21}}}},
            ),
            (
                "1.8.2",
                True,
                {"age": 30, "symptoms": {"oral_ulceration": {"qualifiers": {"duration_days": 22}}}},
            ),
            ("1.8.2", False, {"age": 30, "symptoms": S("oral_ulceration")}),  # duration not recorded
            ("1.8.2", True, {"age": 30, "symptoms": S(neck_lump=["persistent"])}),
            ("1.8.3", True, {"age": 30, "symptoms": S("lip_or_oral_lump")}),
            ("1.8.3", True, {"age": 30, "findings": {"oral_red_or_red_white_patch"}}),
            ("1.8.4", False, {"age": 30, "findings": {"oral_red_or_red_white_patch"}}),
            (
                "1.8.4",
                True,
                {"age": 30, "findings": {"oral_red_or_red_white_patch"}, "history": {"assessed_by_dentist"}},
            ),
            ("1.8.5", True, {"age": 30, "symptoms": S("thyroid_lump")}),
        ],
    )


def test_1_9_brain_and_cns(eval_ctx: EvalContext) -> None:
    run(
        eval_ctx,
        [
            ("1.9.1", False, {"age": 17, "symptoms": S("progressive_loss_of_central_neurological_function")}),
            ("1.9.1", True, {"age": 18, "symptoms": S("progressive_loss_of_central_neurological_function")}),
            ("1.9.2", True, {"age": 24, "symptoms": S("newly_abnormal_central_neurological_function")}),
            ("1.9.2", False, {"age": 25, "symptoms": S("newly_abnormal_central_neurological_function")}),
        ],
    )


def test_1_10_haematological(eval_ctx: EvalContext) -> None:
    run(
        eval_ctx,
        [
            ("1.10.1", False, {"age": 17, "findings": {"pallor"}}),
            ("1.10.1", True, {"age": 18, "findings": {"pallor"}}),
            ("1.10.1", True, {"age": 40, "symptoms": S(fatigue=["persistent"])}),
            ("1.10.1", False, {"age": 40, "symptoms": S("fatigue")}),
            ("1.10.1", True, {"age": 40, "symptoms": S(infection=["recurrent"])}),
            ("1.10.3", True, {"age": 24, "findings": {"pallor"}}),
            ("1.10.3", False, {"age": 25, "findings": {"pallor"}}),
            ("1.10.3", True, {"age": 10, "symptoms": S("bone_pain")}),  # "persistent or unexplained"
            ("1.10.3", False, {"age": 10, "symptoms": S(infection=["recurrent"])}),  # 1.10.3 says persistent
            ("1.10.2", True, {"age": 24, "symptoms": S("petechiae")}),
            ("1.10.2", False, {"age": 25, "symptoms": S("petechiae")}),
            ("1.10.2", False, {"age": 4, "symptoms": S("hepatomegaly")}),
            ("1.10.2", True, {"age": 4, "findings": {"hepatosplenomegaly"}}),
            ("1.10.4", False, {"age": 59, "symptoms": S(bone_pain=["persistent"])}),
            ("1.10.4", True, {"age": 60, "symptoms": S(back_pain=["persistent"])}),
            ("1.10.4", True, {"age": 60, "symptoms": S("fracture")}),
            ("1.10.4", False, {"age": 60, "symptoms": S(fracture=["explained"])}),
            ("1.10.5", True, {"age": 60, "findings": {"blood_tests_suggest_myeloma"}}),
            ("1.10.6", True, {"age": 18, "symptoms": S("splenomegaly")}),
            ("1.10.8", False, {"age": 18, "symptoms": S("splenomegaly")}),
            ("1.10.8", True, {"age": 18, "symptoms": S("lymphadenopathy")}),
            ("1.10.8", False, {"age": 17, "symptoms": S("lymphadenopathy")}),
            ("1.10.9", True, {"age": 24, "symptoms": S("lymphadenopathy")}),
            ("1.10.9", False, {"age": 25, "symptoms": S("lymphadenopathy")}),
            ("1.10.7", True, {"age": 10, "symptoms": S("splenomegaly")}),
            ("1.10.7", False, {"age": 10, "symptoms": S(lymphadenopathy=["explained"])}),
        ],
    )


def test_1_11_sarcomas(eval_ctx: EvalContext) -> None:
    run(
        eval_ctx,
        [
            ("1.11.1", True, {"age": 18, "findings": {"xray_suggests_bone_sarcoma"}}),
            ("1.11.1", False, {"age": 17, "findings": {"xray_suggests_bone_sarcoma"}}),
            ("1.11.2", True, {"age": 24, "findings": {"xray_suggests_bone_sarcoma"}}),
            ("1.11.2", False, {"age": 25, "findings": {"xray_suggests_bone_sarcoma"}}),
            ("1.11.3", True, {"age": 24, "symptoms": S("bone_swelling")}),
            ("1.11.3", False, {"age": 25, "symptoms": S("bone_pain")}),
            ("1.11.4", True, {"age": 18, "symptoms": S(lump=["increasing_in_size"])}),
            ("1.11.4", False, {"age": 18, "symptoms": S("lump")}),
            ("1.11.6", True, {"age": 17, "symptoms": S(lump=["increasing_in_size"])}),
            ("1.11.6", False, {"age": 25, "symptoms": S(lump=["increasing_in_size"])}),
            ("1.11.5", True, {"age": 40, "findings": {"ultrasound_suggests_soft_tissue_sarcoma"}}),
            ("1.11.5", False, {"age": 40, "findings": {"ultrasound_uncertain"}}),
            (
                "1.11.5",
                True,
                {"age": 40, "findings": {"ultrasound_uncertain"}, "history": {"clinical_concern_persists"}},
            ),
            ("1.11.7", True, {"age": 10, "findings": {"ultrasound_suggests_soft_tissue_sarcoma"}}),
        ],
    )


def test_1_12_childhood(eval_ctx: EvalContext) -> None:
    run(
        eval_ctx,
        [
            ("1.12.1", True, {"age": 15, "findings": {"abdominal_mass"}}),
            ("1.12.1", False, {"age": 16, "findings": {"abdominal_mass"}}),
            ("1.12.1", True, {"age": 4, "symptoms": S("hepatomegaly")}),
            ("1.12.2", True, {"age": 2, "findings": {"absent_red_reflex"}}),
            ("1.12.2", False, {"age": 16, "findings": {"absent_red_reflex"}}),
            ("1.12.3", True, {"age": 15, "symptoms": S(haematuria=["visible"])}),
            ("1.12.3", False, {"age": 15, "symptoms": S("haematuria")}),
            ("1.12.3", False, {"age": 16, "findings": {"abdominal_mass"}}),
        ],
    )


def test_1_13_non_site_specific(eval_ctx: EvalContext) -> None:
    run(
        eval_ctx,
        [
            ("1.13.1", True, {"age": 15, "history": {"parental_persistent_concern"}}),
            ("1.13.1", False, {"age": 16, "history": {"parental_persistent_concern"}}),
            ("1.13.2", True, {"age": 30, "symptoms": S("weight_loss")}),
            ("1.13.2", False, {"age": 30, "symptoms": S(weight_loss=["explained"])}),
            ("1.13.2", False, {"age": 30, "symptoms": S("weight_loss"), "negated": {"weight_loss"}}),
            ("1.13.3", True, {"age": 30, "symptoms": S("appetite_loss")}),
            ("1.13.4", True, {"age": 30, "findings": {"deep_vein_thrombosis"}}),
        ],
    )


def test_missing_wording_for_a_near_miss(eval_ctx: EvalContext) -> None:
    res = results(eval_ctx, age=39, smoking="never", symptoms=S("haemoptysis"))["1.1.1"]
    assert not res.met
    assert "age ≥ 40 (patient is 39)" in res.missing
    assert res.closeness > 0


def test_no_criteria_for_an_empty_patient(eval_ctx: EvalContext) -> None:
    assert met_ids(eval_ctx, age=40, sex="female", smoking="never") == set()


@pytest.mark.parametrize("sex", ["female", "male"])
def test_sex_specific_recommendations_follow_recorded_sex(eval_ctx: EvalContext, sex: str) -> None:
    met = met_ids(
        eval_ctx,
        age=60,
        sex=sex,
        symptoms=S("post_menopausal_bleeding", "nocturia", "non_painful_testicular_enlargement"),
    )
    assert ("1.5.10" in met) is (sex == "female")
    assert ("1.6.2" in met) is (sex == "male")
    assert ("1.6.7" in met) is (sex == "male")
