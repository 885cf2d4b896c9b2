"""bench_pages end to end, once, against the live server: the longest demo packet and a 7-page
bundle, in Chromium, without and with pre-rendering. Times are printed, never asserted (they
are the machine's); what is asserted is that the measurement is the one described: the first
screen's images arrived whole, every page image was asked for at both sizes."""

from __future__ import annotations

import io
import json

import pytest

from benchmarks import page_bench
from benchmarks.management.commands import bench_pages

# A benchmark of first paint and image latency: a minute of Chromium timings, in the long
# profile (scripts/test.sh --long); what the pages show is tested in CI by the other e2e tests.
pytestmark = [pytest.mark.browser, pytest.mark.long, pytest.mark.django_db(transaction=True)]


def test_bench_pages_measures_first_paint_and_image_latency_without_and_with_prerendering(
    live_server, capsys
):
    command = bench_pages.Command(stdout=io.StringIO())
    command._user()
    demo = command._longest_demo_packet()
    bundle, created = command._bundle_packet()
    subjects = [command._subject("demo", demo), command._subject("bundle", bundle)]

    with page_bench.Browser(live_server.url, bench_pages.USERNAME, bench_pages.PASSWORD) as browser:
        figures = page_bench.measure(browser=browser, subjects=subjects, runs=1, log=lambda _: None)

    assert created and bundle.document.page_count == 7
    pages = demo.document.page_count + 7
    for phase in ("without_prerender", "with_prerender"):
        for name in ("demo", "bundle"):
            found = figures[phase][name]
            assert found["broken_images"] == 0
            assert found["images_in_view"] >= 2  # the page and its thumbnail at least
        assert figures[phase]["image_latency"]["page"]["n"] == pages
        assert figures[phase]["image_latency"]["thumb"]["n"] == pages
    with capsys.disabled():
        print(
            "\nbench_pages on the live server (first paint p50, ms): "
            + json.dumps(
                {
                    phase: {
                        name: figures[phase][name]["first_paint"]["p50_ms"]
                        for name in ("demo", "bundle")
                    }
                    for phase in ("without_prerender", "with_prerender")
                }
            )
        )
