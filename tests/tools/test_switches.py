"""Which tools a channel's model is offered: the most specific choice an admin made wins."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tomori.config.scope import Scope
from tomori.tools.switches import SwitchTarget, ToolSwitch, offered

SPECIFIC_FIRST = [
    (Scope.CHANNEL, SwitchTarget.TOOL),
    (Scope.CHANNEL, SwitchTarget.SERVER),
    (Scope.SERVER, SwitchTarget.TOOL),
    (Scope.SERVER, SwitchTarget.SERVER),
]


@given(st.dictionaries(st.sampled_from(SPECIFIC_FIRST), st.booleans()))
def test_the_most_specific_choice_decides_and_none_is_on(
    choices: dict[tuple[Scope, SwitchTarget], bool],
) -> None:
    switches = [
        ToolSwitch(scope, kind, "search__web" if kind is SwitchTarget.TOOL else "search", on)
        for (scope, kind), on in choices.items()
    ]
    unrelated = [ToolSwitch(Scope.CHANNEL, SwitchTarget.TOOL, "other", False)]
    decided = offered("search__web", "search", [*switches, *unrelated])
    deciding = next((key for key in SPECIFIC_FIRST if key in choices), None)
    if deciding is None:
        assert decided is None
    else:
        assert decided is not None
        assert (decided.scope, decided.kind, decided.enabled) == (*deciding, choices[deciding])


def test_a_server_choice_never_reaches_a_tool_of_no_server() -> None:
    switches = [ToolSwitch(Scope.CHANNEL, SwitchTarget.SERVER, "current_time", False)]
    assert offered("current_time", None, switches) is None
