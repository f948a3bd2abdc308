"""The report's table of storage endpoints (tb_iotrace.cli.report_text.storage_tables): a row per
endpoint with its figures, at most ENDPOINTS_SHOWN rows and a line for the rest, names escaped."""
from __future__ import annotations

from tb_iotrace.cli.report_text.storage_tables import ENDPOINTS_SHOWN, render_endpoints


def _endpoint(name: str, bytes_in: int = 3 << 20) -> dict:
    return {"endpoint": name, "connections": 2, "calls_in": 40, "calls_out": 3, "bytes_in": bytes_in,
            "bytes_out": 1200, "time_in_s": 0.25, "time_out_s": 0.0005, "sizes_in": {}}


def test_one_row_per_endpoint_with_its_figures() -> None:
    text = render_endpoints([_endpoint("tcp:10.0.0.5:9000")])
    lines = text.splitlines()
    assert lines[0].startswith("Storage endpoints") and "conns" in lines[1]
    cells = lines[2].split()
    assert cells[:4] == ["tcp:10.0.0.5:9000", "2", "40", "3.0"] and cells[5] == "0.2500"
    assert cells[6] == "3" and cells[-1] == "0.0005" and len(lines) == 3 and text.endswith("\n")


def test_past_the_rows_shown_one_line_says_how_many_more() -> None:
    text = render_endpoints([_endpoint(f"tcp:10.0.0.{i}:9000") for i in range(ENDPOINTS_SHOWN + 3)])
    assert text.count("tcp:10.0.0.") == ENDPOINTS_SHOWN and "... 3 more endpoints (--json for all)" in text


def test_an_endpoint_name_cannot_write_to_the_terminal() -> None:
    text = render_endpoints([_endpoint("tcp:evil\x1b[2J\nforged row:1")])
    assert "\x1b" not in text and "\nforged row" not in text and len(text.splitlines()) == 3
