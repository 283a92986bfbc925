"""The one vector-readiness decision: "building" only while something builds."""

from __future__ import annotations

from apus.errors import Problem
from apus.index.identity import IdentityDecision
from apus.index.readiness import NOT_INDEXED, VectorReadiness, vector_readiness

FAILED = Problem("embedding failed (vectors of 5 dimensions instead of 8)", "check the width")


def readiness(
    decision: IdentityDecision | None, *, building: bool, failure: Problem | None
) -> VectorReadiness:
    return vector_readiness(
        decision, progress=lambda: (1, 4), failure=lambda: failure, building=lambda: building
    )


def test_incomplete_vectors_are_building_only_while_someone_embeds() -> None:
    fresh = IdentityDecision("fresh")
    building = readiness(fresh, building=True, failure=FAILED)
    assert building.state == "building" and building.percent == 25
    failed = readiness(fresh, building=False, failure=FAILED)
    assert failed.state == "failed"
    assert failed.problem == Problem(f"embedding stopped at 25%: {FAILED.reason}", FAILED.fix)
    waiting = readiness(fresh, building=False, failure=None)
    assert waiting.state == "waiting"
    assert waiting.problem.reason.endswith("25% done, waiting for the next sync")
    assert waiting.problem.fix == "apus memory index"


def test_served_paused_and_absent_vectors_ask_nothing_more() -> None:
    def never() -> bool:
        raise AssertionError("asked about building for vectors that are not being made")

    decisions = {
        "ready": IdentityDecision("serve"),
        "paused": IdentityDecision("pause", "another model", "apus memory index --force"),
        "absent": None,
    }
    for state, decision in decisions.items():
        found = vector_readiness(
            decision, progress=lambda: (0, 0), failure=lambda: None, building=never
        )
        assert found.state == state
    assert (
        vector_readiness(
            None, progress=lambda: (0, 0), failure=lambda: None, building=never
        ).problem
        == NOT_INDEXED
    )


def test_a_build_says_from_its_own_decision_whether_it_is_the_first() -> None:
    # Status words it "embedding" or "rebuilding" from this, not from a second read of the
    # stored identity, which the build records the moment its last batch lands.
    first = readiness(IdentityDecision("fresh"), building=True, failure=None)
    assert first.state == "building" and first.first_build
    again = readiness(
        IdentityDecision("reembed", "task prefixes changed"), building=True, failure=None
    )
    assert again.state == "building" and not again.first_build


def test_coverage_is_said_only_while_vectors_are_missing() -> None:
    # One formula for status and search: the vectors FAISS holds over the chunks stored,
    # never above all of them (FAISS may hold a vector of a chunk removed meanwhile).
    fresh = IdentityDecision("fresh")
    for building, failure in ((True, None), (False, FAILED), (False, None)):
        incomplete = readiness(fresh, building=building, failure=failure)
        assert incomplete.coverage(1) == 0.25
        assert incomplete.coverage(6) == 1.0
        assert incomplete.coverage(0) is None  # nothing to serve yet
    served = readiness(IdentityDecision("serve"), building=False, failure=None)
    assert served.coverage(4) is None  # all of them
    paused = readiness(IdentityDecision("pause", "another model"), building=False, failure=None)
    assert paused.coverage(4) is None  # another model's vectors are never served
