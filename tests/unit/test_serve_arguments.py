"""The tools' arguments and answers as an agent meets them, without a server: strict
checks with one-line refusals, schemas that say their limits, answers within their caps."""

from __future__ import annotations

import json

import anyio
import pytest

from memvault.errors import MemvaultError
from memvault.serve import arguments
from memvault.serve.arguments import ArgumentError, check, input_schema
from memvault.serve.shaping import Limits, cut_text, shape_asof, shape_recall, size
from memvault.serve.tools import build_tools, descriptions, in_tool_words


@pytest.mark.parametrize(
    ("tool", "given", "said"),
    [
        ("recall", {"query": "x", "limit": True}, "limit must be a whole number"),
        ("recall", {"query": "x", "limit": "10"}, 'not "10"'),
        ("recall", {"query": "x", "limit": 2.5}, "whole number"),
        ("recall", {"query": "x", "limit": 0}, "from 1 to 100, not 0"),
        ("recall", {"query": "x", "limit": 101}, "not 101"),
        ("recall", {"query": "x", "lmit": 3}, "takes no argument 'lmit'"),
        ("recall", {"limit": 3}, "query is missing"),
        ("recall", {"query": 5}, "query must be text"),
        ("recall", {"query": "x" * 2001}, "2,001 characters"),
        ("remember", {"text": ["a"]}, "text must be text"),
        ("remember", {"text": "a", "speaker": False}, "speaker must be text"),
        ("feedback", {"recall_id": "r", "verdict": "maybe"}, "verdict must be one of"),
        ("feedback", {"recall_id": "r", "verdict": True}, "verdict must be text"),
        ("asof", {"subject": "Ada", "at": 20260101}, "at must be text"),
        ("asof", {"subject": "Ada", "when": "now"}, "takes no argument 'when'"),
        ("asof", {"subject": "Ada\x00"}, "subject holds a NUL character"),
        ("asof", {"subject": "Ada", "at": "2026-01-01\x00"}, "at holds a NUL character"),
        ("feedback", {"recall_id": "r\x00", "verdict": "+"}, "recall_id holds a NUL"),
        ("remember", {"text": "a", "speaker": "us\x00er"}, "speaker holds a NUL"),
    ],
)
def test_arguments_are_taken_as_sent_or_refused_in_one_line(
    tool: str, given: dict[str, object], said: str
) -> None:
    with pytest.raises(ArgumentError) as refused:
        check(tool, given)
    message = str(refused.value)
    assert said in message and message.startswith(tool)
    assert "\n" not in message and "pydantic" not in message and "http" not in message


def test_well_formed_arguments_pass_with_defaults_filled() -> None:
    assert check("recall", {"query": "where does Ada work"}) == {
        "query": "where does Ada work", "limit": 10, "session_id": None,
    }  # fmt: skip
    # JSON has one number type: 5.0 is the whole number 5; null is "not given"
    assert check("recall", {"query": "q", "limit": 5.0, "session_id": None})["limit"] == 5
    assert check("feedback", {"recall_id": "r", "verdict": "+"})["verdict"] == "+"


def test_a_nul_in_free_text_is_dropped_as_the_store_drops_it() -> None:
    assert check("recall", {"query": "status\x00 of Quill"})["query"] == "status of Quill"
    assert check("remember", {"text": "tea\x00"})["text"] == "tea"
    given = {"recall_id": "r", "verdict": "+", "note": "\x00right"}
    assert check("feedback", given)["note"] == "right"


def test_schemas_say_their_limits_and_take_nothing_else() -> None:
    for tool in arguments.ARGUMENTS:
        schema = input_schema(tool)
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        for name, prop in schema["properties"].items():
            assert prop["description"], (tool, name)
            if "string" in prop["type"] and "enum" not in prop:
                assert prop["maxLength"] > 0, (tool, name)
    limit = input_schema("recall")["properties"]["limit"]
    assert (limit["minimum"], limit["maximum"], limit["type"]) == (1, 100, "integer")


def test_descriptions_speak_to_an_agent_not_a_shell() -> None:
    texts = descriptions(Limits())
    for tool, text in texts.items():
        assert "memvault recall" not in text and "memvault undo" not in text, tool
        assert "--" not in text and "`memvault" not in text, tool
        assert "Returns JSON" in text, tool
    assert "weak_match" in texts["recall"] and "superseded_by" in texts["recall"]
    assert "2,000 characters" in texts["recall"] and "24,000" in texts["recall"]
    assert "50 facts" in texts["asof"] and "predicates" in texts["asof"]


def test_refusals_lose_their_shell_advice() -> None:
    assert in_tool_words("feedback", "no recall with id 'x' (the recall id is printed by `memvault recall`)") == "feedback: no recall with id 'x'"  # fmt: skip
    assert in_tool_words("asof", "no entity has the id or name 'Z'; `memvault export --type entity` lists them") == "asof: no entity has the id or name 'Z'"  # fmt: skip
    assert in_tool_words("feedback", "--block goes with + or -") == "feedback: block_id goes with + or -"  # fmt: skip
    assert in_tool_words("recall", "recall takes no\nargument") == "recall takes no argument"


def _call(tools: list[object], name: str, given: dict[str, object]) -> object:
    tool = next(t for t in tools if t.name == name)  # type: ignore[attr-defined]
    return anyio.run(tool.run, given, None)  # type: ignore[attr-defined]


def test_a_refused_call_reaches_no_service_and_is_a_tool_error() -> None:
    calls: list[tuple[str, dict[str, object]]] = []

    def service(tool: str, given: dict[str, object]) -> dict[str, object]:
        calls.append((tool, given))
        if given.get("recall_id") == "gone":
            raise MemvaultError("no recall with id 'gone' (the recall id is printed by `memvault recall`)")  # fmt: skip
        return {"results": []}

    tools = build_tools(service, Limits())
    refused = _call(tools, "recall", {"query": "x", "limit": True})
    assert refused.is_error and calls == []  # type: ignore[attr-defined]
    assert refused.content[0].text == "recall: limit must be a whole number from 1 to 100, not true"  # type: ignore[attr-defined]  # fmt: skip
    ok = _call(tools, "recall", {"query": "x"})
    assert not ok.is_error and calls == [("recall", {"query": "x", "limit": 10, "session_id": None})]  # type: ignore[attr-defined]  # fmt: skip
    assert json.loads(ok.content[0].text) == ok.structured_content == {"results": []}  # type: ignore[attr-defined]  # fmt: skip
    gone = _call(tools, "feedback", {"recall_id": "gone", "verdict": "correct"})
    assert gone.is_error and gone.content[0].text == "feedback: no recall with id 'gone'"  # type: ignore[attr-defined]  # fmt: skip


# --------------------------------------------------------------------------- the caps


def test_a_long_text_is_cut_within_the_cap_and_says_how_much_is_left() -> None:
    text = "word " * 5000
    cut = cut_text(text, 2000)
    assert len(cut) <= 2000 and cut.startswith("word word")
    left = int(cut.rsplit("[… ", 1)[1].split(" ")[0].replace(",", ""))
    assert len(cut) - len(cut.rsplit(" [… ", 1)[1]) - 4 + left == len(text)
    assert cut_text("short", 2000) == "short"


def _hit(k: int, chars: int) -> dict[str, object]:
    return {"block_id": f"b{k}", "text": "x" * chars, "score": 1.0 - k / 100}


def test_a_recall_answer_keeps_within_both_caps() -> None:
    limits = Limits(hit_chars=2000, result_chars=24000)
    answer = {"recall_id": "r", "results": [_hit(0, 97_000), _hit(1, 300), _hit(2, 50_000)]}
    shaped = shape_recall(answer, limits)
    first = shaped["results"][0]
    assert first["text_cut"] is True and first["text_chars"] == 97_000
    assert len(first["text"]) <= 2000 and size(shaped) <= 24000
    assert [h["block_id"] for h in shaped["results"]] == ["b0", "b1", "b2"]
    assert "text_cut" not in shaped["results"][1]
    assert shape_recall(shaped, limits) == shaped  # a relayed answer is shaped once
    many = {"recall_id": "r", "results": [_hit(k, 1900) for k in range(60)]}
    kept = shape_recall(many, limits)
    assert size(kept) <= 24000 and kept["omitted"] == 60 - len(kept["results"]) > 0
    assert [h["block_id"] for h in kept["results"]] == [f"b{k}" for k in range(len(kept["results"]))]  # fmt: skip
    # settable: a larger hit cap than the whole answer's still ends within the whole's
    one = shape_recall({"results": [_hit(0, 97_000)]}, Limits(hit_chars=50_000, result_chars=10_000))  # fmt: skip
    assert size(one) <= 10_000 and one["results"][0]["text_chars"] == 97_000


def test_asof_returns_at_most_the_cap_of_facts_and_says_how_many_more() -> None:
    facts = [{"predicate": "knows", "object": f"Person {k}", "note": None, "merged_ids": []} for k in range(114)]  # fmt: skip
    shaped = shape_asof({"subject": "Ada", "facts": facts}, Limits(max_facts=50))
    assert len(shaped["facts"]) == 50 and shaped["more_facts"] == 64
    assert "predicate" in shaped["more_note"]
    assert shaped["facts"][0] == {"predicate": "knows", "object": "Person 0"}  # empty fields out
    small = shape_asof({"facts": facts}, Limits(max_facts=200, result_chars=2000))
    assert size(small) <= 2000 and small["more_facts"] == 114 - len(small["facts"])


def test_the_caps_are_settable_and_refuse_nonsense() -> None:
    env = {"MEMVAULT_SERVE_HIT_CHARS": "500", "MEMVAULT_SERVE_RESULT_CHARS": "8000", "MEMVAULT_SERVE_MAX_FACTS": "5"}  # fmt: skip
    assert Limits.from_env(env) == Limits(500, 8000, 5)
    assert Limits.from_env({}) == Limits(2000, 24000, 50)
    for bad in ("0", "ten", "-5", "1.5"):
        with pytest.raises(MemvaultError, match="MEMVAULT_SERVE_HIT_CHARS"):
            Limits.from_env({"MEMVAULT_SERVE_HIT_CHARS": bad})


def test_a_weak_match_returns_its_nearest_few_only() -> None:
    answer = {"recall_id": "r", "weak_match": True, "results": [_hit(k, 50) for k in range(10)]}
    shaped = shape_recall(answer, Limits())
    assert shaped["weak_match"] is True and len(shaped["results"]) == 3
    assert len(shape_recall(answer | {"weak_match": False}, Limits())["results"]) == 10
