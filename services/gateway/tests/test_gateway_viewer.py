"""Guideline viewer and admin review routes through the gateway, on the REAL retrieval server
(the session's index, built from the real NG12 PDF, with its own copy of the PDF): page PNGs with
highlights, sections, recommendation and symptom-table search, the chunk browser, and the diff
against a version built from a modified knowledge base."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from gateway.app import create_app
from ingestion.index_upload import upload_index
from ng12_common.knowledge import KnowledgeBase, text_hash
from services.gateway.tests.conftest import bearer, live_gateway_settings
from tests.support import RetrievalProcess, wait_for

CLIN = bearer("gp", "clinician")
ADMIN = bearer("root", "admin")


@pytest.fixture(scope="module")
def gw(retrieval_addr: str, redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with live_gateway_settings(retrieval_addr, redis_url, tmp_path_factory.mktemp("viewer")) as settings:
        with TestClient(create_app(settings), raise_server_exceptions=False) as client:
            ready = lambda: client.get("/readyz").json()["status"] == "ready"  # noqa: E731
            wait_for(ready, 120, 0.5, "the gateway to be ready")
            yield client


def _is_fill(px: tuple[int, ...]) -> bool:
    """The highlight's amber fill over white paper (semi-transparent: r high, g a little lower, b low)."""
    r, g, b = px[:3]
    return r >= 240 and 225 <= g <= 250 and 140 <= b <= 190


def test_page_png_draws_the_highlight_inside_its_boxes_only(gw: TestClient) -> None:
    rec = gw.get("/api/v1/guideline/recommendations/1.1.1", headers=CLIN).json()
    page = rec["highlights"][0]["page"]
    boxes = [b for b in rec["highlights"] if b["page"] == page]
    r = gw.get(f"/api/v1/guideline/pages/{page}.png?highlight=1.1.1&scale=2", headers=CLIN)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "image/png"
    assert r.headers["cache-control"] == "private, max-age=3600"
    assert r.headers["x-index-version"] == rec["index_version"]
    image = Image.open(io.BytesIO(r.content)).convert("RGB")
    assert image.size == (round(595.28 * 2), round(841.89 * 2))
    inside = outside = 0
    boxed = [(b["x0"] * 2 - 4, b["top"] * 2 - 4, b["x1"] * 2 + 4, b["bottom"] * 2 + 4) for b in boxes]
    for y in range(0, image.height, 2):
        for x in range(0, image.width, 2):
            if not _is_fill(image.getpixel((x, y))):  # type: ignore[arg-type]
                continue
            if any(x0 <= x <= x1 and y0 <= y <= y1 for x0, y0, x1, y1 in boxed):
                inside += 1
            else:
                outside += 1
    assert inside > 200, inside
    assert outside == 0, outside

    plain = gw.get(f"/api/v1/guideline/pages/{page}.png", headers=CLIN)
    assert plain.status_code == 200 and plain.headers["etag"] != r.headers["etag"]
    plain_img = Image.open(io.BytesIO(plain.content)).convert("RGB")
    assert plain_img.size == (round(595.28 * 1.5), round(841.89 * 1.5))  # the default scale
    assert not any(_is_fill(plain_img.getpixel((x, y))) for x in range(0, 890, 3) for y in range(0, 1260, 3))  # type: ignore[arg-type]

    again = gw.get(
        f"/api/v1/guideline/pages/{page}.png?highlight=1.1.1&scale=2",
        headers={**CLIN, "If-None-Match": r.headers["etag"]},
    )
    assert again.status_code == 304 and again.headers["etag"] == r.headers["etag"]


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/api/v1/guideline/pages/abc.png", 404, "page_not_found"),
        ("/api/v1/guideline/pages/9.jpg", 404, "page_not_found"),
        ("/api/v1/guideline/pages/0.png", 422, "page_out_of_range"),
        ("/api/v1/guideline/pages/96.png", 422, "page_out_of_range"),
        ("/api/v1/guideline/pages/-3.png", 422, "page_out_of_range"),
        ("/api/v1/guideline/pages/9.png?highlight=1.99.99", 404, "recommendation_not_found"),
        ("/api/v1/guideline/pages/9.png?highlight=lung", 422, "invalid_request"),
        ("/api/v1/guideline/pages/9.png?scale=5", 422, "invalid_request"),
        ("/api/v1/guideline/recommendations?section=lung", 422, "invalid_request"),
    ],
)
def test_viewer_errors(gw: TestClient, path: str, status: int, code: str) -> None:
    r = gw.get(path, headers=CLIN)
    assert r.status_code == status, r.text
    assert r.json()["error"]["code"] == code and r.json()["error"]["message"]


def test_viewer_needs_sign_in(gw: TestClient) -> None:
    assert gw.get("/api/v1/guideline/pages/9.png").status_code == 401
    assert gw.get("/api/v1/guideline/sections").status_code == 401


def test_sections_recommendations_and_symptom_tables(gw: TestClient) -> None:
    sections = gw.get("/api/v1/guideline/sections", headers=CLIN).json()
    by_id = {s["id"]: s for s in sections["sections"]}
    assert by_id["1.1"]["title"] == "Lung and pleural cancers"
    assert by_id["1.1"]["recommendation_ids"][0] == "1.1.1"
    assert sum(len(s["recommendation_ids"]) for s in sections["sections"]) == 109

    page = gw.get("/api/v1/guideline/recommendations?section=1.5", headers=CLIN).json()
    assert page["total"] == len(by_id["1.5"]["recommendation_ids"]) and page["items"]
    assert all(i["section"] == "1.5" for i in page["items"])
    found = gw.get("/api/v1/guideline/recommendations?q=HAEMOPTYSIS", headers=CLIN).json()
    assert found["total"] >= 1 and all("haemoptysis" in i["text"].lower() for i in found["items"])
    by_id_q = gw.get("/api/v1/guideline/recommendations?q=1.1.1", headers=CLIN).json()
    assert "1.1.1" in [i["id"] for i in by_id_q["items"]]
    two = gw.get("/api/v1/guideline/recommendations?limit=2&offset=1", headers=CLIN).json()
    assert two["total"] == 109 and [i["id"] for i in two["items"]] == ["1.1.2", "1.1.3"]
    assert all(i["section_title"] and i["action"] for i in two["items"])
    both = gw.get(
        "/api/v1/guideline/recommendations?section=1.1&q=chest%20x-ray&limit=200", headers=CLIN
    ).json()
    assert both["total"] == len(both["items"]) >= 1
    assert all(i["section"] == "1.1" and "chest x-ray" in i["text"].lower() for i in both["items"])

    tables = gw.get("/api/v1/guideline/symptom-tables", headers=CLIN).json()
    assert tables["total"] == len(tables["items"]) >= 200
    row = tables["items"][0]
    assert row["table"] and row["symptom"] and row["cancer"] and row["recommendation_ids"] and row["page"] > 0
    narrowed = gw.get("/api/v1/guideline/symptom-tables?q=haemoptysis", headers=CLIN).json()
    assert 0 < narrowed["total"] == len(narrowed["items"]) < tables["total"]
    by_rec = gw.get("/api/v1/guideline/symptom-tables?q=1.1.1", headers=CLIN).json()["items"]
    assert by_rec and all("1.1.1" in r["recommendation_ids"] or "1.1.1" in r["text"] for r in by_rec)
    assert all(
        "haemoptysis" in (r["symptom"] + r["text"] + " ".join(r["heading_path"])).lower()
        for r in narrowed["items"]
    )


def test_chunk_browser_filters_and_pages(gw: TestClient) -> None:
    indexes = gw.get("/api/v1/admin/indexes", headers=ADMIN).json()
    version = indexes["active_version"]
    record = next(v for v in indexes["versions"] if v["version"] == version)
    assert record["has_source_pdf"] is True and record["source_filename"].endswith(".pdf")
    assert isinstance(record["stale_criteria"], list) and isinstance(record["unused_criteria"], list)

    base = f"/api/v1/admin/indexes/{version}/chunks"
    everything = gw.get(base, headers=ADMIN).json()
    assert everything["counts_by_type"] == record["chunk_counts"]
    assert everything["total"] == sum(record["chunk_counts"].values()) and len(everything["items"]) == 20

    first = gw.get(f"{base}?doc_type=symptom_index&limit=5", headers=ADMIN).json()
    second = gw.get(f"{base}?doc_type=symptom_index&limit=5&offset=5", headers=ADMIN).json()
    assert first["total"] == second["total"] == record["chunk_counts"]["symptom_index"]
    ids = [i["chunk_id"] for i in first["items"]] + [i["chunk_id"] for i in second["items"]]
    assert len(set(ids)) == 10 and all(i["doc_type"] == "symptom_index" for i in first["items"])

    lung = gw.get(f"{base}?section=1.1&doc_type=rule_canonical&limit=100", headers=ADMIN).json()
    assert lung["items"] and all(i["section"] == "1.1" for i in lung["items"])
    assert (
        lung["items"][0]["chunk_id"] == "ng12:rec:1.1.1" and lung["items"][0]["recommendation_id"] == "1.1.1"
    )
    q = gw.get(f"{base}?q=haemoptysis%20chest&limit=100", headers=ADMIN).json()
    assert q["total"] >= 1
    for item in q["items"]:
        detail = gw.get(f"{base}/{item['chunk_id']}", headers=ADMIN).json()
        assert "haemoptysis" in detail["text"].lower() and "chest" in detail["text"].lower()

    rs = gw.get(f"{base}?doc_type=rule_search&q=1.1.1", headers=ADMIN).json()["items"][0]
    detail = gw.get(f"{base}/{rs['chunk_id']}", headers=ADMIN).json()
    assert detail["chunk_id"] == rs["chunk_id"] and detail["metadata"]
    assert detail["recommendation"]["id"] == rs["recommendation_id"] and detail["recommendation"]["text"]

    no_chunk = gw.get(f"{base}/ng12:nope", headers=ADMIN)  # mapped from retrieval's NOT_FOUND kind
    assert no_chunk.status_code == 404 and no_chunk.json()["error"]["code"] == "chunk_not_found"
    no_version = gw.get("/api/v1/admin/indexes/v999/chunks/ng12:rec:1.1.1", headers=ADMIN)
    assert no_version.status_code == 404 and no_version.json()["error"]["code"] == "index_version_not_found"
    missing = gw.get("/api/v1/admin/indexes/v999/chunks", headers=ADMIN)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "index_version_not_found"
    assert gw.get(f"{base}?limit=0", headers=ADMIN).status_code == 422
    assert gw.get(f"{base}?doc_type=poems", headers=ADMIN).status_code == 422
    assert gw.get(base, headers=CLIN).status_code == 403


def _modified_kb(kb: KnowledgeBase) -> KnowledgeBase:
    """The real knowledge base with 1.1.1's text changed, 1.1.2 moved a page, 1.1.3 removed and a
    new 1.1.99; only a few search chunks (the diff reads canonical texts)."""
    recs = []
    for rec in kb.recommendations:
        if rec.id == "1.1.3":
            continue
        if rec.id == "1.1.1":
            text = rec.text.replace("Refer", "Urgently refer", 1) + " Reviewed in 2027."
            rec = rec.model_copy(update={"text": text, "text_hash": text_hash(text)})
        if rec.id == "1.1.2":
            rec = rec.model_copy(update={"page": rec.page + 1, "page_end": rec.page_end + 1})
        recs.append(rec)
    recs.append(recs[0].model_copy(update={"id": "1.1.99", "text": "A new recommendation for review."}))
    chunks = [c for c in kb.chunks if c.doc_type == "rule_search" and "1.1.3" not in c.recommendation_ids][
        :12
    ]
    report = kb.report.model_copy(
        update={"criteria_coverage": {**kb.report.criteria_coverage, "stale": ["1.1.1"], "unused": ["1.1.3"]}}
    )
    return kb.model_copy(update={"recommendations": recs, "chunks": chunks, "report": report})


def test_diff_against_a_version_built_from_a_modified_kb(
    gw: TestClient, retrieval_server: RetrievalProcess
) -> None:
    kb_file = next(Path(retrieval_server.chroma_dir.parent / "kb").glob("ng12-*.json"))
    kb = KnowledgeBase.model_validate_json(kb_file.read_text(encoding="utf-8"))
    built = upload_index(retrieval_server.addr, _modified_kb(kb), activate=False)
    a = gw.get("/api/v1/admin/indexes", headers=ADMIN).json()["active_version"]
    b = built["version"]
    assert built["stale_criteria"] == ["1.1.1"] and built["unused_criteria"] == ["1.1.3"]

    r = gw.get(f"/api/v1/admin/indexes/{a}/diff/{b}", headers=ADMIN)
    assert r.status_code == 200, r.text
    diff = r.json()
    assert (diff["a"], diff["b"]) == (a, b)
    by_id = {d["id"]: d for d in diff["recommendations"]}
    assert by_id["1.1.1"]["status"] == "text_changed"
    ops = by_id["1.1.1"]["word_diff"]
    assert {"op": "insert", "text": "Urgently refer"} in ops or any(
        o["op"] == "insert" and "Urgently" in o["text"] for o in ops
    )
    assert any(o["op"] == "insert" and "2027." in o["text"] for o in ops)
    assert not any(o["op"] == "delete" for o in ops)  # words only added (case is not a change)
    rebuilt = " ".join(o["text"] for o in ops if o["op"] != "delete")
    assert rebuilt.split() == by_id["1.1.1"]["text_b"].split()
    old = " ".join(o["text"] for o in ops if o["op"] != "insert")
    assert old.lower().split() == by_id["1.1.1"]["text_a"].lower().split()
    assert (
        by_id["1.1.2"]["status"] == "page_moved" and by_id["1.1.2"]["page_b"] == by_id["1.1.2"]["page_a"] + 1
    )
    assert by_id["1.1.3"]["status"] == "removed" and by_id["1.1.3"]["page_b"] is None
    assert by_id["1.1.99"]["status"] == "added" and by_id["1.1.99"]["text_a"] is None
    assert by_id["1.2.1"]["status"] == "unchanged"
    assert diff["summary"] == {
        "added": 1,
        "removed": 1,
        "text_changed": 1,
        "page_moved": 1,
        "unchanged": 109 - 3,
    }
    assert diff["stale_criteria_b"] == ["1.1.1"] and diff["unused_criteria_b"] == ["1.1.3"]

    listed = {v["version"]: v for v in gw.get("/api/v1/admin/indexes", headers=ADMIN).json()["versions"]}
    assert listed[b]["stale_criteria"] == ["1.1.1"] and listed[b]["has_source_pdf"] is False
    # the version without its own PDF is browsable, and says why it cannot render pages
    assert gw.get(f"/api/v1/admin/indexes/{b}/chunks", headers=ADMIN).json()["total"] == 12 + 109

    for bad in (f"/api/v1/admin/indexes/v999/diff/{b}", f"/api/v1/admin/indexes/{a}/diff/v999"):
        missing = gw.get(bad, headers=ADMIN)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "index_version_not_found"
    assert gw.get(f"/api/v1/admin/indexes/{a}/diff/{b}", headers=CLIN).status_code == 403
    audit = gw.get("/api/v1/admin/audit?kind=admin", headers=ADMIN).json()["records"]
    assert any(rec["summary"].get("action") == "index_diff" for rec in audit)
