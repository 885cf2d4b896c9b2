"""evaluate's bundle figures: boundaries scored, and a bundle accepted with a wrong cut or a
wrong page type named, since that is what a clinician would never see."""

from __future__ import annotations

from benchmarks.evaluation import BundleResult, bundle_metrics, format_bundles


def bundle(name: str, *, truth: set[int], cut: set[int], decision: str, right: int = 4):
    return BundleResult(name, 4, right, truth, cut, decision)


def test_a_bundle_accepted_with_a_missed_cut_or_a_wrong_page_is_named():
    figures = bundle_metrics(
        [
            bundle("exact.txt", truth={3}, cut={3}, decision="AUTO_ACCEPT"),
            bundle("missed.txt", truth={2, 4}, cut={4}, decision="AUTO_ACCEPT"),
            bundle("wrong-page.txt", truth={3}, cut={3}, decision="AUTO_ACCEPT", right=3),
            bundle("escalated.txt", truth={2}, cut=set(), decision="ESCALATE_TO_SME"),
        ]
    )
    assert figures["accepted_wrong"] == ["missed.txt", "wrong-page.txt"]
    assert (figures["boundary_precision"], figures["boundary_recall"]) == (1.0, 0.6)
    assert figures["missed"] == {"missed.txt": [2], "escalated.txt": [2]}
    lines = format_bundles("Bundles", figures)
    assert lines[-1] == "  accepted with a wrong cut or page type: 2 (missed.txt, wrong-page.txt)"
