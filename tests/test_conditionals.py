"""The #if branches a build's -D defines rule out (mpnpu.tools.ut.conditionals): decided only from the
defines, every undecidable branch kept."""

from __future__ import annotations

import pytest

from mpnpu.tools.ut.conditionals import active_text, decide, parse_defines


def test_defines_are_read_from_the_d_flags_only() -> None:
    assert parse_defines(["-DSCENARIO_NUM=2 -DFLAG", "-I/x", "MULTI_KERNEL_TARGET", "-DV="]) == \
        {"SCENARIO_NUM": "2", "FLAG": "1", "V": ""}


@pytest.mark.parametrize(("condition", "value"), [
    ("SCENARIO_NUM == 2", True), ("SCENARIO_NUM == 1", False), ("SCENARIO_NUM != 2 && FLAG", False),
    ("defined(FLAG) || SCENARIO_NUM > 3", True), ("!defined FLAG", False), ("SCENARIO_NUM * 2 == 4u", True),
    ("__CCE_AICORE__ == 220", None), ("defined(ASCENDC_CPU_DEBUG)", None), ("SCENARIO_NUM == 2 && X", None),
    ("SCENARIO_NUM / 2", None), ("SCENARIO_NUM ==", None),
])
def test_a_condition_is_decided_only_from_the_builds_defines(condition: str, value: bool | None) -> None:
    assert decide(condition, {"SCENARIO_NUM": "2", "FLAG": "1"}) is value


def test_ruled_out_branches_are_blanked_and_undecided_ones_kept_with_the_line_numbers() -> None:
    text = "\n".join([
        "#if MODE == 1",        # 0
        "one",                  # 1
        "#elif MODE == 2",      # 2
        "two",                  # 3
        "#  if HEADER_MACRO",   # 4: undecided, inside the taken branch
        "maybe",                # 5
        "#  else",              # 6
        "maybe_not",            # 7
        "#  endif",             # 8
        "#else",                # 9
        "other",                # 10
        "#endif",               # 11
        "#ifndef MODE",         # 12
        "no_mode",              # 13
        "#endif",               # 14
        "#define LONG \\",      # 15
        "  continued",          # 16
        "#ifdef SOMETHING",     # 17: not a define of the build: kept
        "kept",                 # 18
        "#endif",               # 19
    ])
    out = active_text(text, {"MODE": "2"}).split("\n")
    assert len(out) == 20
    assert out[1] == "" and out[3] == "two" and out[5] == "maybe" and out[7] == "maybe_not"
    assert out[10] == "" and out[13] == "" and out[16] == "  continued" and out[18] == "kept"
