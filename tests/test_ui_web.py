"""The web app in a real browser: one test per flow of issue 14, an axe-core scan of every tab.

The whole stack runs as processes (deploy/run_stack.py, as `make run`), started once for this
module; Playwright drives Debian's Chromium. Pages run under the gateway's real CSP, and any CSP
violation fails the test that caused it. Each flow saves a 1280x800 screenshot: into docs/ui/,
which the user guide docs/ui.md shows, with UPDATE_UI_SCREENSHOTS=1, else under var/ui-screenshots.
The axe scan runs in a context that bypasses the CSP only so that axe-core (npm, pinned in
tests/ui/package-lock.json, installed by `make test`) can be injected.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from playwright.sync_api import expect

from tests.support import REPO, load_launcher, stack_config

pytestmark = [pytest.mark.e2e, pytest.mark.browser]

UI_REDIS_DB = 11  # its own database: e2e 13, first-ingestion 14, tests 15, benches and eval 10 and 12
# the screenshots the user guide shows are refreshed with UPDATE_UI_SCREENSHOTS=1; otherwise each
# flow still saves its screenshot, under var/ui-screenshots, so a test run leaves docs/ untouched
_REFRESH_GUIDE = os.environ.get("UPDATE_UI_SCREENSHOTS") == "1"
SHOTS = REPO / "docs" / "ui" if _REFRESH_GUIDE else REPO / "var" / "ui-screenshots"
SHOTS.mkdir(parents=True, exist_ok=True)
AXE = REPO / "tests" / "ui" / "node_modules" / "axe-core" / "axe.min.js"
VIEWPORT = {"width": 1280, "height": 800}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, ng12_pdf: Path, redis_url: str) -> Iterator[Any]:
    launcher = load_launcher()
    url = re.sub(r"/\d+$", f"/{UI_REDIS_DB}", redis_url)
    redis.Redis.from_url(url).flushdb()
    var_dir = tmp_path_factory.mktemp("ui-stack")
    cfg = stack_config(launcher, redis_url=url, ng12_pdf=ng12_pdf, var_dir=var_dir)
    s = launcher.Stack(cfg)
    s.start()
    try:
        s.wait_ready(600)
        yield s
    finally:
        s.stop()


def _password(stack: Any, role: str) -> str:
    from gateway.security.local_accounts import read_initial_passwords

    return str(read_initial_passwords(stack.cfg.var_dir / "auth")[role])


@pytest.fixture(scope="module")
def base_url(stack: Any) -> str:
    return f"http://127.0.0.1:{stack.cfg.gateway_port}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    executable = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    assert executable, "the browser tests need Chromium (scripts/ensure_chromium.sh installs it)"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield b
        b.close()


class Session:
    """A signed-in browser page, recording CSP violations and page errors."""

    def __init__(self, browser: Any, base_url: str, stack: Any, role: str, **context: Any) -> None:
        self.context = browser.new_context(viewport=VIEWPORT, **context)
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)
        self.problems: list[str] = []
        self.page.on("pageerror", lambda exc: self.problems.append(f"page error: {exc}"))
        self.page.on(
            "console",
            lambda msg: self.problems.append(msg.text) if "Content Security Policy" in msg.text else None,
        )
        self.page.goto(base_url + "/")
        self.page.fill("#username", role)
        self.page.fill("#password", _password(stack, role))
        self.page.click("#signin-form button[type=submit]")
        self.page.wait_for_selector("#app:not([hidden])")

    def tab(self, name: str) -> Any:
        self.page.click(f"#tab-{name}")
        self.page.wait_for_selector(f"#panel-{name}:not([hidden])")
        return self.page

    def shot(self, name: str, full_page: bool = False) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full_page)

    def check(self) -> None:
        problems, self.problems = self.problems, []
        assert not problems, problems


@pytest.fixture(scope="module")
def gp(browser: Any, base_url: str, stack: Any) -> Iterator[Session]:
    s = Session(browser, base_url, stack, "clinician", permissions=["clipboard-read", "clipboard-write"])
    yield s
    s.context.close()


@pytest.fixture(scope="module")
def admin(browser: Any, base_url: str, stack: Any) -> Iterator[Session]:
    s = Session(browser, base_url, stack, "admin")
    yield s
    s.context.close()


@pytest.fixture(autouse=True)
def _no_csp_violations(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    for name in ("gp", "admin"):
        if name in request.fixturenames:
            request.getfixturevalue(name).check()


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _assess_stored(page: Any, patient: str) -> None:
    page.locator("#patient option").nth(10).wait_for(state="attached")
    page.select_option("#patient", patient)
    page.click("#assess-btn")
    page.wait_for_selector("#assess-out .result-head")


# --- Assess ---------------------------------------------------------------------------------------


def test_assess_a_stored_patient(gp: Session) -> None:
    page = gp.tab("assess")
    _assess_stored(page, "PT-101")
    assert "the stored record" in page.text_content("#record-status")
    badge = page.locator("#assess-out .result-head .badge.action")
    assert badge.get_attribute("data-action") == "suspected_cancer_pathway_referral"
    assert "Suspected cancer pathway referral" in badge.text_content()
    assert "diagnosis or ruling out within 28 days" in page.text_content("#assess-out .timeframe")
    assert "PT-101 (stored record)" in page.text_content("#assess-out .subject")
    lung = page.locator('#assess-out .matched[data-recommendation-id="1.1.1"]')
    assert "page 9" in lung.locator(".rec-head").text_content()
    quote = lung.locator("blockquote").inner_text()
    assert _words(quote) == _words(
        "Refer people using a suspected cancer pathway referral for lung cancer if they: have chest X-ray "
        "findings that suggest lung cancer or are aged 40 and over with unexplained haemoptysis. [2015]"
    )
    assert lung.locator("a.viewer-link").get_attribute("href") == "#guideline/1.1.1"
    # the judgement call behind 1.10.1 is shown prominently, not folded
    assert page.locator("#assess-out .needs-review").is_visible()
    assert "1.10.1" in page.text_content("#assess-out .needs-review")
    assert page.locator("#assess-out .near-miss").count() >= 1
    assert page.locator("#assess-out .assumptions li").count() >= 5
    # Copy summary: plain text with citations, for the EHR
    page.click("#copy-summary")
    expect(page.locator("#copy-status")).to_contain_text("copied")
    summary = page.evaluate("navigator.clipboard.readText()")
    assert "Top action: Suspected cancer pathway referral" in summary
    assert "NG12 1.1.1 (page 9)" in summary and "unexplained haemoptysis" in summary
    gp.shot("assess-stored")


def test_assess_an_edited_patient(gp: Session) -> None:
    page = gp.tab("assess")
    page.select_option("#patient", "PT-101")
    page.fill("#age", "38")  # below 1.1.1's "aged 40 and over"
    assert "edited" in page.text_content("#record-status")
    page.click("#assess-btn")
    page.wait_for_selector("#assess-out .result-head")
    assert "PT-101, edited" in page.text_content("#assess-out .subject")
    assert page.locator('#assess-out .matched[data-recommendation-id="1.1.1"]').count() == 0
    near = page.locator('#assess-out .near-miss[data-recommendation-id="1.1.1"]')
    assert "age ≥ 40 (patient is 38)" in near.text_content()
    # the stored patient is unchanged: loading it again gives its own age
    page.select_option("#patient", "")
    page.select_option("#patient", "PT-101")
    assert page.input_value("#age") == "55"
    page.fill("#age", "38")
    page.locator("#assess-out .near-misses").scroll_into_view_if_needed()
    gp.shot("assess-edited")


def test_assess_a_typed_free_text_record_with_suggestions(gp: Session, base_url: str, stack: Any) -> None:
    lexicon = httpx.get(f"{base_url}/api/v1/guideline/lexicon", headers=stack.auth_headers(), timeout=30)
    assert lexicon.status_code == 200 and lexicon.json()["index_version"]
    assert any(t["label"] == "haemoptysis" and "hemoptysis" in t["synonyms"] for t in lexicon.json()["terms"])
    assert httpx.get(f"{base_url}/api/v1/guideline/lexicon", timeout=30).status_code == 401
    page = gp.tab("assess")
    page.click("#clear-btn")
    page.fill("#age", "62")
    page.select_option("#gender", "Female")
    page.select_option("#smoking", "Never Smoked")
    page.fill("#duration", "21")
    # suggestions from the served lexicon as you type; keyboard to choose
    page.click("#symptoms")
    page.keyboard.type("post-menop")
    option = page.locator("#suggest-list .option").first
    option.wait_for()
    assert "menopausal bleeding" in option.text_content()
    page.keyboard.press("ArrowDown")
    assert page.get_attribute("#symptoms", "aria-activedescendant") == "suggest-0"
    page.keyboard.press("Enter")
    assert "menopausal bleeding" in page.input_value("#symptoms")
    assert page.locator("#suggest-list").is_hidden()
    page.keyboard.press("Enter")
    page.keyboard.type("tired all the time")
    page.keyboard.press("Escape")
    page.fill("#exam", "no abdominal mass")
    page.click("#add-test")
    page.fill("#tests-body tr:nth-child(1) .test-name", "haemoglobin")
    page.fill("#tests-body tr:nth-child(1) .test-value", "105")
    page.fill("#tests-body tr:nth-child(1) .test-unit", "g/L")
    page.click("#add-test")
    page.fill("#tests-body tr:nth-child(2) .test-name", "CRP")
    page.fill("#tests-body tr:nth-child(2) .test-value", "4")
    page.click("#assess-btn")
    page.wait_for_selector("#assess-out .result-head")
    assert "typed record" in page.text_content("#assess-out .subject")
    endometrial = page.locator('#assess-out .matched[data-recommendation-id="1.5.10"]')
    assert endometrial.count() == 1, page.text_content("#assess-out")
    tests = page.text_content("#assess-out .tests")
    assert "low haemoglobin" in tests and "CRP" in tests  # used, and listed as not used
    # a bad value is refused in the form with a clear message, before any request
    page.fill("#age", "200")
    page.click("#assess-btn")
    assert "Age" in page.text_content("#form-error")
    assert page.get_attribute("#age", "aria-invalid") == "true"
    page.fill("#age", "62")
    page.click("#assess-btn")
    page.wait_for_selector("#assess-out .result-head")
    assert page.text_content("#form-error") == ""
    page.locator("#assess-out .matches").scroll_into_view_if_needed()
    gp.shot("assess-typed")


def test_an_unread_finding_is_warned(gp: Session) -> None:
    page = gp.tab("assess")
    page.click("#clear-btn")
    page.fill("#age", "50")
    page.select_option("#gender", "Male")
    page.fill("#symptoms", "odd tingling in the left elbow")
    page.click("#assess-btn")
    warning = page.locator("#assess-out .incomplete")
    warning.wait_for()
    assert warning.get_attribute("role") == "alert"
    assert "odd tingling in the left elbow" in warning.text_content()
    assert "NOT checked against NG12" in warning.text_content()
    assert page.locator("#assess-out .result-head .badge.action").get_attribute("data-action") == "incomplete"
    assert "⚠ not understood" in page.text_content("#assess-out .findings")
    gp.shot("assess-unread")


# --- Guideline viewer ----------------------------------------------------------------------------


def test_a_citation_opens_the_viewer_with_the_highlight(gp: Session) -> None:
    page = gp.tab("assess")
    _assess_stored(page, "PT-110")
    page.click('#assess-out .matched[data-recommendation-id="1.6.4"] a.viewer-link')
    page.wait_for_selector("#panel-guideline:not([hidden])")
    assert page.get_attribute("#tab-guideline", "aria-selected") == "true"
    page.wait_for_selector("#rec-view .page-img")
    assert "NG12 1.6.4" in page.text_content("#rec-view h2")
    img = page.locator("#rec-view .page-img").first
    assert (img.get_attribute("src") or "").startswith("data:image/png;base64,")
    assert img.evaluate("i => i.complete && i.naturalWidth") > 500
    boxes = page.locator("#rec-view .hl-box")
    assert boxes.count() >= 3
    first = boxes.first.bounding_box()
    frame = page.locator("#rec-view .page-frame").first.bounding_box()
    assert first and frame and first["width"] > 100 and first["y"] >= frame["y"]
    assert boxes.first.is_visible()
    # the page image itself carries the highlight (drawn by the server from the active PDF)
    assert "1.6.4 highlighted" in img.get_attribute("alt")
    gp.shot("viewer-highlight")
    # browsing: a section's recommendations and the Part B symptom tables, with search
    page.select_option("#section-select", "1.6")
    page.wait_for_selector('#browse-list [data-rec="1.6.4"]')
    page.fill("#browse-q", "haematuria")
    expect(page.locator("#browse-count")).to_contain_text("haematuria")
    page.click("#browse-tables")
    expect(page.locator("#browse-count")).to_contain_text("symptom-table")
    assert page.locator("#browse-list .table-row").count() >= 1
    assert "1.6" in page.text_content("#browse-list")


# --- Chat ----------------------------------------------------------------------------------------


def test_chat_with_citations_survives_a_reload(gp: Session) -> None:
    page = gp.tab("chat")
    page.locator("#history .chat-empty, #history .turn").first.wait_for()
    page.click("#new-session")
    page.wait_for_selector("#history .chat-empty")
    page.fill("#message", "When should I refer a 55 year old smoker with unexplained haemoptysis?")
    page.keyboard.press("Enter")
    page.locator("#history .turn-assistant").first.wait_for()
    answer = page.locator("#history .turn-assistant").first
    assert answer.locator(".badge.grounding").get_attribute("data-grounding") == "sufficient"
    assert "Grounded in NG12" in answer.locator(".badge.grounding").text_content()
    cards = answer.locator(".cite-card")
    assert cards.count() >= 1
    card = answer.locator('.cite-card[data-recommendation-id="1.1.1"]')
    assert "page 9" in card.text_content() and "haemoptysis" in card.locator("blockquote").text_content()
    assert "Search:" in answer.text_content()
    assert "age 55" in answer.locator(".clinical-summary").text_content()
    page.fill("#message", "What is the best antibiotic for a sore throat?")
    page.click("#ask-btn")
    try:
        page.wait_for_function(  # the answer, or the error the page shows instead
            "() => document.querySelectorAll('#history .turn-assistant').length > 1"
            " || document.querySelector('#chat-error').textContent.trim() !== ''"
        )
    except Exception as exc:
        raise AssertionError(
            f"busy={page.text_content('#chat-busy')!r} message={page.input_value('#message')!r} "
            f"turns={page.locator('#history .turn').count()} btn_disabled={page.is_disabled('#ask-btn')}"
        ) from exc
    assert page.text_content("#chat-error").strip() == "", page.text_content("#chat-error")
    second = page.locator("#history .turn-assistant").nth(1).locator(".badge.grounding")
    assert second.get_attribute("data-grounding") in {"none", "out_of_scope"}
    gp.shot("chat")
    session = page.get_attribute("#session-label", "data-session")
    turns = page.locator("#history .turn").count()
    page.reload()
    page.wait_for_selector("#panel-chat:not([hidden])")
    page.locator("#history .turn-assistant").nth(1).wait_for()
    assert page.get_attribute("#session-label", "data-session") == session
    assert page.locator("#history .turn").count() == turns == 4
    reloaded = page.locator("#history .turn-assistant").first
    assert reloaded.locator('.cite-card[data-recommendation-id="1.1.1"]').count() == 1
    assert "Search:" in reloaded.text_content()  # the strategy and the patient read come back too
    assert "age 55" in reloaded.locator(".clinical-summary").text_content()
    assert page.locator(f'#session-list [data-session="{session}"] [aria-current=true]').count() == 1
    # a citation card opens the viewer
    reloaded.locator('.cite-card[data-recommendation-id="1.1.1"] a.viewer-link').click()
    page.wait_for_selector("#rec-view .page-img")
    assert "NG12 1.1.1" in page.text_content("#rec-view h2")


# --- Admin ---------------------------------------------------------------------------------------


def _active(base_url: str, stack: Any) -> str:
    reply = httpx.get(f"{base_url}/api/v1/admin/indexes", headers=stack.auth_headers("admin"), timeout=30)
    return str(reply.json()["active_version"])


def test_admin_upload_progress_diff_activate_and_roll_back(
    admin: Session, base_url: str, stack: Any, ng12_pdf: Path, tmp_path: Path
) -> None:
    page = admin.tab("admin")
    page.wait_for_selector("#indexes .index-row")
    before = _active(base_url, stack)
    # the same guideline with a byte appended after %%EOF: a new file, so a new version is built
    edition = tmp_path / "ng12-reissued.pdf"
    edition.write_bytes(ng12_pdf.read_bytes() + b"\n% reissued\n")
    page.set_input_files("#pdf-file", str(edition))
    page.click("#upload-btn")
    expect(page.locator("#upload-msg")).to_contain_text("Accepted", timeout=60_000)
    row = page.locator("#jobs tr.job").first
    assert "ng12-reissued.pdf" in row.text_content()
    row.locator(".stage").wait_for()
    page.locator("#jobs tr.job progress, #jobs tr.job[data-state=SUCCESS]").first.wait_for()
    admin.shot("admin-progress")
    done = page.locator('#jobs tr.job[data-state="SUCCESS"], #jobs tr.job[data-state="FAILURE"]').first
    done.wait_for(timeout=300_000)
    assert done.get_attribute("data-state") == "SUCCESS", done.text_content()
    page.wait_for_selector("#job-report .report")
    report = page.text_content("#job-report")
    new = re.search(r"Built version (\S+)", report)
    assert new, report
    version = new.group(1)
    assert "STALE" in report  # "No STALE criteria" or the list: never silent
    page.wait_for_selector(f'#indexes tr.index-row[data-version="{version}"]')
    new_row = page.locator(f'#indexes tr.index-row[data-version="{version}"]')
    assert new_row.get_attribute("data-active") == "false"
    assert "none stale" in new_row.text_content() or "STALE" in new_row.text_content()
    # the diff, side by side
    new_row.get_by_role("button", name=f"Diff vs {before}").click()
    page.wait_for_selector("#diff-out .diff-summary")
    assert "unchanged: 109" in page.text_content("#diff-out .diff-summary")
    page.uncheck("#diff-changed")
    page.wait_for_selector("#diff-out .diff-table")
    assert page.locator("#diff-out .diff-table tbody tr").count() == 109
    first = page.locator('#diff-out tr[data-rec="1.1.1"] td.side')
    assert _words(first.nth(0).text_content()) == _words(first.nth(1).text_content())
    page.locator("#diff-title").scroll_into_view_if_needed()
    admin.shot("admin-diff")
    # activate, with confirmation
    new_row.get_by_role("button", name=f"Activate {version}…").click()
    dialog = page.locator("#confirm-dialog")
    dialog.wait_for()
    assert f"Activate {version}?" in dialog.text_content()
    page.click("#confirm-ok")
    expect(page.locator("#index-msg")).to_contain_text(f"{version} is now active")
    assert _active(base_url, stack) == version
    page.wait_for_selector(f'#indexes tr.index-row[data-version="{version}"][data-active="true"]')
    page.locator("#indexes-title").scroll_into_view_if_needed()
    admin.shot("admin-indexes")
    # roll back, with confirmation; cancelling changes nothing
    page.click("#rollback-btn")
    page.click("#confirm-cancel")
    assert _active(base_url, stack) == version
    page.click("#rollback-btn")
    page.click("#confirm-ok")
    expect(page.locator("#index-msg")).to_contain_text("Rolled back")
    assert _active(base_url, stack) == before
    # the chunk browser: filter, search, open one
    page.select_option("#chunk-type", "rule_canonical")
    page.fill("#chunk-q", "haemoptysis")
    page.click("#chunk-form button[type=submit]")
    page.wait_for_selector('#chunks [data-chunk="ng12:rec:1.1.1"]')
    page.click('#chunks [data-chunk="ng12:rec:1.1.1"] button')
    page.wait_for_selector("#chunk-detail .chunk-card")
    detail = page.text_content("#chunk-detail")
    assert "Metadata" in detail and "NG12 1.1.1" in detail
    assert "rule_canonical" in page.text_content("#chunk-counts")
    page.locator("#chunks-title").scroll_into_view_if_needed()
    admin.shot("admin-chunks")


def test_a_bad_upload_is_refused(admin: Session, base_url: str, stack: Any, tmp_path: Path) -> None:
    page = admin.tab("admin")
    page.wait_for_selector("#jobs > *")  # the job list (or "No ingestion jobs yet.") is rendered
    jobs_before = page.locator("#jobs tr.job").count()
    fake = tmp_path / "guideline.pdf"
    fake.write_bytes(b"This is a text file, not a PDF.\n" * 20)
    page.set_input_files("#pdf-file", str(fake))
    page.click("#upload-btn")
    expect(page.locator("#upload-error")).to_contain_text("Refused")
    error = page.text_content("#upload-error")
    assert re.search(r"Refused \(4\d\d", error), error
    assert "PDF" in error
    shown = page.locator("#jobs > *").first.element_handle()
    with page.expect_response(
        lambda r: r.url.endswith("/api/v1/admin/ingestions") and r.request.method == "GET"
    ) as listing:
        page.click("#jobs-refresh")
    assert listing.value.ok
    page.wait_for_function("old => !old.isConnected", arg=shown)  # the list was rendered again from it
    assert page.locator("#jobs tr.job").count() == jobs_before  # nothing was queued
    listed = httpx.get(f"{base_url}/api/v1/admin/ingestions", headers=stack.auth_headers("admin"), timeout=30)
    assert all(j.get("filename") != "guideline.pdf" for j in listed.json()["jobs"])
    page.locator("#upload-title").scroll_into_view_if_needed()
    admin.shot("admin-bad-upload")


# --- Accessibility and small screens --------------------------------------------------------------


def test_every_tab_passes_axe_and_fits_390px(browser: Any, base_url: str, stack: Any) -> None:
    assert AXE.is_file(), "axe-core is missing: run `npm ci --prefix tests/ui` (make test does)"
    s = Session(browser, base_url, stack, "admin", bypass_csp=True)  # only to inject axe-core
    page = s.page
    try:
        report: dict[str, list[str]] = {}
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 800})
            for tab in ("assess", "chat", "guideline", "admin", "about"):
                s.tab(tab)
                if tab == "assess":
                    _assess_stored(page, "PT-101")
                elif tab == "chat":
                    page.wait_for_selector("#history .turn-assistant, #history .chat-empty")
                elif tab == "guideline":
                    page.goto(f"{base_url}/#guideline/1.1.1")
                    page.wait_for_selector("#rec-view .page-img")
                elif tab == "admin":
                    page.wait_for_selector("#indexes .index-row")
                    page.wait_for_selector("#chunks .chunk-item")
                page.add_script_tag(path=str(AXE))
                violations = page.evaluate(
                    """async () => {
                        const r = await axe.run(document, {resultTypes: ['violations']});
                        const where = (v) => v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ');
                        return r.violations.filter((v) => ['serious', 'critical'].includes(v.impact))
                          .map((v) => `${v.id} (${v.impact}): ${where(v)}`);
                    }"""
                )
                if violations:
                    report[f"{tab}@{width}"] = violations
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                if overflow > 1:
                    report.setdefault(f"{tab}@{width}", []).append(f"horizontal overflow of {overflow}px")
            if width == 390:
                s.tab("assess")
                page.locator("#assess-out .result-head").scroll_into_view_if_needed()
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SHOTS / "phone-assess.png"))
        assert not report, report
    finally:
        s.context.close()
