"""The assembled knowledge base, its chunks, the atomic write, the CLI and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ingestion import __main__ as cli
from ingestion.kb import builder, layout
from ingestion.kb.errors import KnowledgeBaseError
from ingestion.kb.parse import ParsedGuideline, parse_guideline
from ingestion.kb.part_a import parse_part_a, to_recommendations
from ingestion.kb.part_b import parse_part_b
from ingestion.kb.structure import regions
from ingestion.kb.terms import age_groups
from ng12_common.knowledge import KnowledgeBase


def minimal_pdf(text: str = "Hello world", encrypt: bool = False) -> bytes:
    """A tiny valid one-page PDF (optionally with a standard-security /Encrypt dictionary)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    if encrypt:
        owner, user = b"41" * 32, b"42" * 32
        objects.append(b"<< /Filter /Standard /V 1 /R 2 /O <" + owner + b"> /U <" + user + b"> /P -44 >>")
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    trailer = b"<< /Size %d /Root 1 0 R" % (len(objects) + 1)
    if encrypt:
        file_id = b"<0123456789abcdef0123456789abcdef>"
        trailer += b" /Encrypt %d 0 R /ID [%s %s]" % (len(objects), file_id, file_id)
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return out


# ----------------------------------------------------------------------------- the artifact


def test_guideline_meta_read_from_the_pdf(ng12_kb: KnowledgeBase, ng12_pdf_path: Path) -> None:
    import hashlib

    meta = ng12_kb.guideline
    assert meta.title == "Suspected cancer: recognition and referral"
    assert meta.code == "NG12"
    assert (meta.published, meta.last_updated) == ("2015-06-23", "2026-01-12")
    assert meta.page_count == 95
    assert meta.source_sha256 == hashlib.sha256(ng12_pdf_path.read_bytes()).hexdigest()


def test_report(ng12_kb: KnowledgeBase) -> None:
    counts = ng12_kb.report.counts
    assert counts["recommendations"] == 109
    assert counts["symptom_rows"] == 215
    assert counts["unresolved_references"] == 0
    assert counts["chunks_rule_canonical"] == counts["chunks_rule_search"] == 109
    assert counts["chunks_symptom_index"] == 215
    assert counts["chunks_guideline_text"] >= 40
    assert counts["chunks"] == len(ng12_kb.chunks)
    # The only structural surprise in this PDF: "1.3.6]" printed without its opening bracket.
    assert len(ng12_kb.report.warnings) == 1 and "1.3.6]" in ng12_kb.report.warnings[0]
    assert ng12_kb.report.criteria_coverage  # filled by attach_criteria


def test_chunks(ng12_kb: KnowledgeBase) -> None:
    by_id = {c.id: c for c in ng12_kb.chunks}
    assert len(by_id) == len(ng12_kb.chunks)
    recs = {r.id: r for r in ng12_kb.recommendations}
    for rec_id, rec in recs.items():
        canonical = by_id[f"ng12:rec:{rec_id}"]
        assert (canonical.doc_type, canonical.text, canonical.page) == ("rule_canonical", rec.text, rec.page)
        search = by_id[f"ng12:search:{rec_id}"]
        assert search.doc_type == "rule_search" and search.recommendation_ids == [rec_id]
        assert rec.text in search.text
    search = by_id["ng12:search:1.1.1"].text
    assert search.startswith("NG12 > 1.1 Lung and pleural cancers > Lung cancer > 1.1.1\n")
    assert "suspected cancer pathway referral" in search.split("\n")[1]
    assert "women aged 18 and over" in by_id["ng12:search:1.5.2"].text
    for row in ng12_kb.symptom_rows:
        chunk = by_id[row.id]
        assert chunk.doc_type == "symptom_index" and chunk.recommendation_ids == row.references
        assert chunk.text.startswith("NG12 symptom table > " + " > ".join(row.heading_path))
    for chunk in ng12_kb.chunks:
        json.dumps(chunk.metadata)  # JSON-serialisable
        assert chunk.page >= 1
        if chunk.doc_type == "guideline_text":
            assert chunk.id.startswith("ng12:text:") and chunk.recommendation_ids == []


def _text_chunk(kb: KnowledgeBase, heading: str) -> str:
    found = [
        c.text for c in kb.chunks if c.doc_type == "guideline_text" and c.text.split("\n", 1)[0] == heading
    ]
    assert found, heading
    return "\n".join(found)


def test_terms_definitions(ng12_kb: KnowledgeBase) -> None:
    scpr = _text_chunk(ng12_kb, "Suspected cancer pathway referral")
    assert "diagnosis or ruling out of cancer within 28 days of being referred urgently" in scpr
    assert _text_chunk(ng12_kb, "Very urgent") == "Very urgent\nTo happen within 48 hours."
    assert _text_chunk(ng12_kb, "Urgent") == "Urgent\nTo happen or be done before 2 weeks."
    assert "acute admission or referral occurring within a few hours" in _text_chunk(ng12_kb, "Immediate")
    assert _text_chunk(ng12_kb, "Children") == "Children\nFrom birth to 15 years."
    assert _text_chunk(ng12_kb, "Young people") == "Young people\nAged 16 to 24 years."
    assert "2 separate aspects:\n- timely review" in _text_chunk(ng12_kb, "Safety netting")


def test_other_prose(ng12_kb: KnowledgeBase) -> None:
    assert "organised into 3 separate sections" in _text_chunk(ng12_kb, "How the guideline is organised")
    wording = _text_chunk(ng12_kb, "Recommendation wording in guideline updates")
    assert "the word 'consider' may not necessarily be used" in wording
    assert "apply to women aged 18 and over" in _text_chunk(ng12_kb, "Ovarian cancer")
    concern = _text_chunk(ng12_kb, "1.13 Non-site-specific symptoms")
    assert "the total risk of cancer of any type may be higher" in concern
    updates = _text_chunk(ng12_kb, "Update information")
    assert "January 2026: We have removed an incorrect recommendation" in updates
    assert "Why the committee made the recommendation" in {
        c.text.split("\n", 1)[0] for c in ng12_kb.chunks if c.doc_type == "guideline_text"
    }
    texts = " ".join(c.text for c in ng12_kb.chunks if c.doc_type == "guideline_text")
    skipped = ("Longitudinal studies should be carried out", "More than 300,000 new cancers", "Yellow Card")
    assert not [s for s in skipped if s in texts]
    assert "Post-menopausal bleeding is unexplained vaginal bleeding" in texts


def test_chunk_ids_stable_across_builds(ng12_kb: KnowledgeBase, ng12_pdf_path: Path) -> None:
    # The second build parses in this process (workers=1: the path taken inside Celery workers),
    # the session build in a process pool: same ids, same texts.
    again = builder.assemble(parse_guideline(ng12_pdf_path, workers=1), with_enrichment=False)
    assert [c.id for c in again.chunks] == [c.id for c in ng12_kb.chunks]
    assert [r.text_hash for r in again.recommendations] == [r.text_hash for r in ng12_kb.recommendations]


def test_no_process_pool_inside_daemonic_workers(
    monkeypatch: pytest.MonkeyPatch, ng12_pdf_path: Path
) -> None:
    class _Daemon:
        daemon = True

    monkeypatch.setattr(layout.multiprocessing, "current_process", lambda: _Daemon())
    assert layout._extract_parallel(ng12_pdf_path, [0, 1], 2) is None


def test_write_is_atomic_and_round_trips(ng12_kb: KnowledgeBase, tmp_path: Path) -> None:
    out = tmp_path / "kb" / "ng12.json"
    builder.write_knowledge_base(ng12_kb, out)
    assert KnowledgeBase.model_validate_json(out.read_text(encoding="utf-8")) == ng12_kb
    assert sorted(p.name for p in out.parent.iterdir()) == ["ng12.json"]
    assert out.stat().st_mode & 0o777 == 0o644


def test_failed_write_leaves_the_old_file(
    ng12_kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "ng12.json"
    out.write_text("previous", encoding="utf-8")

    def fail(*_args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(builder.os, "replace", fail)
    with pytest.raises(OSError):
        builder.write_knowledge_base(ng12_kb, out)
    assert out.read_text(encoding="utf-8") == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["ng12.json"]


def test_cli_writes_the_kb(
    ng12_kb: KnowledgeBase,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(cli, "build_knowledge_base", lambda pdf, workers=None: ng12_kb)
    out = tmp_path / "kb.json"
    assert cli.main(["build-kb", "--pdf", "ng12.pdf", "--out", str(out)]) == 0
    written = KnowledgeBase.model_validate_json(out.read_text(encoding="utf-8"))
    assert written.report.counts["recommendations"] == 109
    assert "109 recommendations" in capsys.readouterr().out


# ----------------------------------------------------------------------------- bad input

BAD_INPUTS = {
    "empty": (lambda real: b"", "empty file"),
    "not_pdf": (lambda real: b"this is not a PDF at all\n" * 100, "not a PDF"),
    "truncated": (lambda real: real[: len(real) // 2], "truncated"),
    "encrypted": (lambda real: minimal_pdf(encrypt=True), "encrypted"),
    "not_ng12": (lambda real: minimal_pdf("Hello world"), "not the NG12 guideline"),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_raises_typed_error(case: str, tmp_path: Path, ng12_pdf_path: Path) -> None:
    make, message = BAD_INPUTS[case]
    pdf = tmp_path / "input.pdf"  # the messages name the file: keep the case name out of it
    pdf.write_bytes(make(ng12_pdf_path.read_bytes()))
    with pytest.raises(KnowledgeBaseError, match=message) as info:
        parse_guideline(pdf)
    assert isinstance(info.value, ValueError)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(KnowledgeBaseError, match="not found"):
        parse_guideline(tmp_path / "absent.pdf")


@pytest.mark.parametrize("case", ["empty", "truncated", "encrypted", "not_ng12"])
def test_cli_bad_input_exits_2_and_writes_nothing(
    case: str, tmp_path: Path, ng12_pdf_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, message = BAD_INPUTS[case]
    pdf = tmp_path / "input.pdf"
    pdf.write_bytes(make(ng12_pdf_path.read_bytes()))
    out = tmp_path / "out" / "kb.json"
    assert cli.main(["build-kb", "--pdf", str(pdf), "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists() and not out.parent.exists()


def test_module_entry_point_exit_code(tmp_path: Path) -> None:
    pdf = tmp_path / "bad.pdf"
    pdf.write_bytes(b"")
    out = tmp_path / "kb.json"
    proc = subprocess.run(
        [sys.executable, "-m", "ingestion", "build-kb", "--pdf", str(pdf), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert proc.returncode == 2, proc.stderr
    assert "empty file" in proc.stderr
    assert not out.exists()


def test_parse_is_independent_of_enrichment(ng12_parsed: ParsedGuideline) -> None:
    kb = builder.assemble(ng12_parsed, with_enrichment=False)
    assert kb.lexicon == [] and kb.report.criteria_coverage == {}
    assert all(r.criteria_status == "none" for r in kb.recommendations)


def test_prose_is_verbatim(
    ng12_kb: KnowledgeBase, ng12_reference: Any, normalise: Callable[[str], str]
) -> None:
    checked = 0
    for chunk in ng12_kb.chunks:
        if chunk.doc_type != "guideline_text":
            continue
        body = chunk.text.split("\n", 1)[1] if "\n" in chunk.text else chunk.text
        assert normalise(body) in ng12_reference.span(chunk.page, chunk.metadata["page_end"]), chunk.id
        checked += 1
    assert checked == ng12_kb.report.counts["chunks_guideline_text"]


def test_structure_surprises_are_warned(ng12_parsed: ParsedGuideline) -> None:
    doc = ng12_parsed.doc
    doc_regions = regions(doc)
    part = parse_part_a(doc, doc_regions)
    dropped = replace(part, drafts=[d for d in part.drafts if d.id != "1.2.5"])
    recs, warnings = to_recommendations(dropped, doc, age_groups(doc_regions))
    assert len(recs) == 108 and any("1.2.5 is missing" in w for w in warnings)
    doubled = replace(part, drafts=[*part.drafts, part.drafts[0]])
    _, warnings = to_recommendations(doubled, doc, age_groups(doc_regions))
    assert any("1.1.1 appears more than once" in w for w in warnings)

    ids = {r.id for r in ng12_parsed.recommendations} - {"1.5.2"}
    part_b = parse_part_b(doc, doc_regions, ids)
    assert set(part_b.unresolved) == {"1.5.2"}
    assert any("[1.5.2] is not a Part A recommendation" in w for w in part_b.warnings)
    assert all("1.5.2" not in row.references for row in part_b.rows)
